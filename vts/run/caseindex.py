"""Cases by spec file, for runners that name cases first and build them later (the pytest plugin).

pytest collects every case as an item before running any; a validation
sweep has hundreds of thousands.  Collection keeps only names (family and
case name per spec file); a case is built again, from its spec file, when
it runs.  Cases of one file run together, so a small cache of the last
files' cases makes that one load per file per worker, not one per case.
The order and names are those of ``iter_cases``: device-level cases
first, then each spec file's models, family by family.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from vts.families.base import Case, DeviceInfo, Family
from vts.run.runner import select_families

#: Spec files whose cases stay built (a worker runs one file's cases together).
CACHED_FILES = 2


@dataclass(frozen=True)
class CaseRef:
    family: str
    name: str


class CaseIndex:
    """Names of the cases of a family selection, and the cases themselves on demand."""

    def __init__(self, families: Sequence[str] | None, extensions: object = None,
                 device: DeviceInfo | None = None) -> None:
        self.families = select_families(families, device or DeviceInfo(name="nnvts"))
        self.extensions = extensions
        self._by_name = {f.name: f for f in self.families}
        self._cache: OrderedDict[str | None, dict[str, tuple[Family, Case]]] = OrderedDict()

    def _device_cases(self) -> Iterator[tuple[Family, Case]]:
        for family in self.families:
            for case in family.device_cases():
                yield family, case

    def _file_cases(self, spec_path: str) -> Iterator[tuple[Family, Case]]:
        from vts.model.casemodel import parse_spec
        from vts.spec.loader import load_file

        model_families = [f for f in self.families if type(f).model_cases is not Family.model_cases]
        if not model_families:
            return
        spec_file = load_file(spec_path)
        for model in parse_spec(spec_file.document, self.extensions):  # type: ignore[arg-type]
            for family in model_families:
                for case in family.model_cases(model, spec_file.path):
                    yield family, case

    def device_refs(self) -> list[CaseRef]:
        return [CaseRef(f.name, c.name) for f, c in self._device_cases()]

    def file_refs(self, spec_path: str) -> list[CaseRef]:
        return [CaseRef(f.name, c.name) for f, c in self._file_cases(spec_path)]

    def case(self, spec_path: str | None, name: str) -> tuple[Family, Case]:
        """The case ``name`` of ``spec_path`` (None: the device-level cases), built again."""
        cases = self._cache.get(spec_path)
        if cases is None:
            source = self._device_cases() if spec_path is None else self._file_cases(spec_path)
            cases = {case.name: (family, case) for family, case in source}
            self._cache[spec_path] = cases
            while len(self._cache) > CACHED_FILES:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(spec_path)
        try:
            return cases[name]
        except KeyError:
            where = spec_path or "the device-level families"
            raise LookupError(f"no case {name!r} in {where} (did the spec change since collection?)") from None
