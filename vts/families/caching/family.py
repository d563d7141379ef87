"""The caching family: compilation caches restore correct models or fail cleanly (VTS CompilationCachingTests.cpp).

The suite's 11 CompilationCachingTest tests and 5 CompilationCachingSecurityTest
tests (× seeds 0..9), on a float32 and a quant8 model, plus one device-level
case for the cache file counts.  "Save" is ``prepare_model`` with cache
handles and a 32-byte token: it must succeed whatever is wrong with the
handles (a caching problem never changes preparation, docs/caching.md).  "Retrieve" is
``prepare_model_from_cache``.  The rules, from the 1.2/1.3 IDevice contract:

* a correctly saved model is restored and computes the goldens (or the
  driver answers GENERAL_FAILURE: "cannot cache this model", which the
  suite accepts), also when the files have non-zero offsets and sizes;
* wrong handle counts, unusable handles or read-only files at save time
  still prepare a correct model, and retrieving with the same handles is
  INVALID_ARGUMENT or GENERAL_FAILURE; a WRITE_ONLY file at retrieve time
  is exactly GENERAL_FAILURE;
* a model cache that was modified (one bit), lengthened, replaced by another
  model's, or raced by a concurrent writer must never yield a model that
  computes something else: GENERAL_FAILURE (or, under the TOCTOU races,
  the right model);
* a corrupted data cache may give wrong answers (it is not security
  sensitive) but must not crash: a prepared model exactly when NONE.

Drivers without caching (0, 0) must answer GENERAL_FAILURE from
``prepare_model_from_cache``; the other cases are then skipped, as in VTS.
See ``cache_files`` for how the suite's two-descriptor handles are rendered.
"""

from __future__ import annotations

import os
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from vts.families._kit.executions import (
    Executor,
    claim_broken,
    execute,
    refused_plainly,
    supported_operations,
    unsupported_names,
)
from vts.families._kit.judge import judge_success
from vts.families.base import Case, CaseFailure, Family, Outcome, RunOptions, failed, passed, skipped
from vts.families.caching import cache_files as cf
from vts.families.registry import register_family
from vts.hal.enums import (
    BYTE_SIZE_OF_CACHE_TOKEN,
    MAX_NUMBER_OF_CACHE_FILES,
    ErrorStatus,
    ExecutionPreference,
    MeasureTiming,
    Priority,
)
from vts.hal.errors import DriverError
from vts.hal.interfaces import Device, PreparedModel
from vts.model.builtin.cache_models import chain, mobilenet
from vts.model.casemodel import CaseModel, ConstantPolicy, build_request, close_model, to_hal_model

GF, IA, NONE = ErrorStatus.GENERAL_FAILURE, ErrorStatus.INVALID_ARGUMENT, ErrorStatus.NONE
REFUSED = (IA, GF)
SEEDS = tuple(range(10))
TOCTOU_ITERATIONS = 100
EXECUTIONS = ((Executor.SYNC, MeasureTiming.NO), (Executor.ASYNC, MeasureTiming.YES))

MOBILENET_TESTS = ("cache_saving_and_retrieval", "cache_saving_and_retrieval_non_zero_offset",
                   "save_to_cache_invalid_num_cache", "prepare_from_cache_invalid_num_cache",
                   "save_to_cache_invalid_fd", "prepare_from_cache_invalid_fd",
                   "save_to_cache_invalid_access_mode", "prepare_from_cache_invalid_access_mode")
CHAIN_TESTS = ("save_to_cache_toctou", "prepare_from_cache_toctou", "replace_security_sensitive_cache")
SECURITY_TESTS = ("corrupted_model_cache", "wrong_length_model_cache", "corrupted_data_cache",
                  "wrong_length_data_cache", "wrong_token")


@dataclass
class _Run:
    """One case's device, options, cache directory and token."""

    device: Device
    options: RunOptions
    n_model: int
    n_data: int
    files: cf.CacheDir
    token: bytearray = field(default_factory=lambda: bytearray(BYTE_SIZE_OF_CACHE_TOKEN))

    @property
    def caching(self) -> bool:
        return self.n_model > 0 or self.n_data > 0

    def hal(self, model: CaseModel):
        return to_hal_model(model, ConstantPolicy(pool_kind=self.options.pool_kind), self.options.extensions)

    def fully_supported(self, model: CaseModel) -> str:
        """Why the model cannot be used ("" when every operation is supported)."""
        hal_model = self.hal(model)
        try:
            flags = supported_operations(self.device, hal_model)
            return "" if all(flags) else f"unsupported: {unsupported_names(hal_model, flags)}"
        finally:
            close_model(hal_model)

    def save(self, model: CaseModel, handles: cf.Handles, token: bytes | None = None) -> PreparedModel:
        """prepareModel with cache handles: must succeed whatever the handles (VTS CompilationCachingTests.cpp)."""
        hal_model = self.hal(model)
        try:
            prepared = self.device.prepare_model(hal_model, ExecutionPreference.FAST_SINGLE_ANSWER, Priority.MEDIUM,
                                                 None, handles.model, handles.data, bytes(token or self.token))
        except DriverError as error:
            if refused_plainly(self.device, hal_model):
                # Caching is not to blame: the model is refused without cache handles too, although every
                # operation was claimed (``fully_supported``).
                raise CaseFailure(claim_broken(error.status), (error.message,)) from None
            raise CaseFailure(f"prepare_model with cache handles returned {error.status.name}: a caching problem "
                              "must never change the preparation result", (error.message,)) from None
        finally:
            close_model(hal_model)
        if prepared is None:
            raise CaseFailure("prepare_model returned no prepared model and no error")
        return prepared

    def retrieve(self, handles: cf.Handles, token: bytes | None = None) -> tuple[ErrorStatus, PreparedModel | None]:
        try:
            prepared = self.device.prepare_model_from_cache(None, handles.model, handles.data,
                                                            bytes(token or self.token))
        except DriverError as error:
            return error.status, None
        if prepared is None:
            raise CaseFailure("prepare_model_from_cache answered NONE without a prepared model")
        return NONE, prepared

    def evaluate(self, model: CaseModel, prepared: PreparedModel, where: str) -> list[str]:
        """The generated-test evaluation (sync, async with timing) against the model's golden."""
        example = model.examples[0]
        for executor, measure in EXECUTIONS:
            built = build_request(model, example, self.options.pool_kind, extensions=self.options.extensions)
            try:
                answer = execute(prepared, built.request, executor, measure)
                problems = judge_success(model, example, built, answer, measure, f"{where}, {executor.value}")
            finally:
                built.close()
            if problems:
                return problems
        return []


def _refused(status: ErrorStatus, prepared: PreparedModel | None, allowed: tuple[ErrorStatus, ...], what: str) -> str:
    if prepared is not None or status not in allowed:
        names = " or ".join(s.name for s in allowed)
        return f"{what}: prepare_model_from_cache answered {status.name}, expected {names} and no prepared model"
    return ""


def _file_variants(run: _Run, handles: cf.Handles) -> list[tuple[str, cf.Handles]]:
    """The suite's four wrong-count handle lists: one extra / one fewer model and data handle."""
    tmp = run.files.tmp()
    variants = [("one extra model cache handle", cf.Handles([*handles.model, tmp], handles.data))]
    if handles.model:
        variants.append(("one fewer model cache handle", cf.Handles(handles.model[:-1], handles.data)))
    variants.append(("one extra data cache handle", cf.Handles(handles.model, [*handles.data, tmp])))
    if handles.data:
        variants.append(("one fewer data cache handle", cf.Handles(handles.model, handles.data[:-1])))
    return variants


# ---------------------------------------------------------------------------
# CompilationCachingTest on MobileNet


def _saving_and_retrieval(run: _Run, model: CaseModel, offset: bool) -> Outcome:
    handles = run.files.handles()
    if offset:  # a non-empty file at offset 2: the driver must truncate and must not assume offset 0
        for fd in (*handles.model, *handles.data):
            os.write(fd, b"\x00\x00")
    run.save(model, handles)
    run.files.close_fds()
    handles = run.files.handles()
    if offset:
        for fd in (*handles.model, *handles.data):
            os.read(fd, 1)
    status, prepared = run.retrieve(handles)
    if not run.caching:
        problem = _refused(status, prepared, (GF,), "caching unsupported")
        return failed(problem) if problem else passed("caching unsupported: GENERAL_FAILURE as required")
    if status == GF:
        return skipped("the driver did not restore the model (GENERAL_FAILURE): the suite accepts that as "
                       "'cannot cache this model'")
    if status != NONE or prepared is None:
        return failed(f"prepare_model_from_cache answered {status.name} for a correctly saved cache")
    problems = run.evaluate(model, prepared, "restored model")
    return failed(problems[0], tuple(problems)) if problems else passed("restored and correct")


def _save_with_bad_handles(run: _Run, model: CaseModel, lists: Callable[[_Run], list[tuple[str, cf.Handles]]],
                           allowed: tuple[ErrorStatus, ...]) -> Outcome:
    """Save with each bad handle list (correct model required), then retrieve with the same list."""
    checked = []
    for label, handles in lists(run):
        prepared = run.save(model, handles)
        problems = run.evaluate(model, prepared, f"saved with {label}")
        if problems:
            return failed(problems[0], tuple(problems))
        status, restored = run.retrieve(handles)
        problem = _refused(status, restored, allowed, f"retrieving with {label}")
        if problem:
            return failed(problem)
        checked.append(label)
    return passed(f"{len(checked)} handle lists refused")


def _retrieve_with_bad_handles(run: _Run, model: CaseModel, lists: Callable[[_Run], list[tuple[str, cf.Handles]]],
                               allowed: tuple[ErrorStatus, ...]) -> Outcome:
    run.save(model, run.files.handles())
    run.files.close_fds()
    variants = lists(run)
    for label, handles in variants:
        status, restored = run.retrieve(handles)
        problem = _refused(status, restored, allowed, f"retrieving with {label}")
        if problem:
            return failed(problem)
    return passed(f"{len(variants)} handle lists refused")


def _per_file(mode: int, what: str) -> Callable[[_Run], list[tuple[str, cf.Handles]]]:
    """For each cache file, a fresh handle list in which only that file is opened with ``mode``."""
    def lists(run: _Run) -> list[tuple[str, cf.Handles]]:
        files = [("model", i) for i in range(run.n_model)] + [("data", i) for i in range(run.n_data)]
        return [(f"{kind} cache {i} {what}", run.files.handles(modes={(kind, i): mode})) for kind, i in files]
    return lists


def _counts(run: _Run) -> list[tuple[str, cf.Handles]]:
    return _file_variants(run, run.files.handles())


def _mobilenet_test(test: str, run: _Run, model: CaseModel) -> Outcome:
    if test == "cache_saving_and_retrieval":
        return _saving_and_retrieval(run, model, offset=False)
    if test == "cache_saving_and_retrieval_non_zero_offset":
        return _saving_and_retrieval(run, model, offset=True)
    if not run.caching:
        return skipped("caching unsupported (get_number_of_cache_files_needed answered 0, 0)")
    if test == "save_to_cache_invalid_num_cache":
        return _save_with_bad_handles(run, model, _counts, REFUSED)
    if test == "prepare_from_cache_invalid_num_cache":
        return _retrieve_with_bad_handles(run, model, _counts, REFUSED)
    if test == "save_to_cache_invalid_fd":
        return _save_with_bad_handles(run, model, _per_file(cf.NOT_A_FILE, "not a file (/dev/null)"), REFUSED)
    if test == "prepare_from_cache_invalid_fd":
        return _retrieve_with_bad_handles(run, model, _per_file(cf.NOT_A_FILE, "not a file (/dev/null)"), REFUSED)
    if test == "save_to_cache_invalid_access_mode":
        return _save_with_bad_handles(run, model, _per_file(cf.READ_ONLY, "read-only"), REFUSED)
    return _retrieve_with_bad_handles(run, model, _per_file(cf.WRITE_ONLY, "write-only"), (GF,))


# ---------------------------------------------------------------------------
# TOCTOU and replacement on the ADD/MUL chains


def _chain_test(test: str, run: _Run, quantized: bool) -> Outcome:
    if not run.caching or run.n_model == 0:
        return skipped("no model cache files: nothing security-sensitive to replace")
    add, mul = chain("ADD", quantized), chain("MUL", quantized)
    for model in (add, mul):
        why = run.fully_supported(model)
        if why:
            return skipped(why)
    files = run.files
    run.save(mul, files.handles("_mul"))
    files.close_fds()
    mul_token = bytes(run.token)
    run.token[0] += 1  # the ADD chain is saved under another token
    if test == "replace_security_sensitive_cache":
        run.save(add, files.handles())
        files.close_fds()
        files.copy(files.model_names("_mul"), files.model_names())
        status, prepared = run.retrieve(files.handles())
        if prepared is not None:
            problems = run.evaluate(add, prepared, "restored from a replaced cache")
            wrong = f"; it computes {'something else' if problems else 'the ADD chain'}"
            return failed(f"a model cache replaced by another model's (saved under token {mul_token[:2].hex()}..) "
                          f"was accepted{wrong}", tuple(problems))
        return passed(status.name) if status == GF else failed(
            f"replaced model cache: prepare_model_from_cache answered {status.name}, expected GENERAL_FAILURE")
    restored = 0
    for iteration in range(TOCTOU_ITERATIONS):
        racing_save = test == "save_to_cache_toctou"
        if not racing_save:
            run.save(add, files.handles())
            files.close_fds()
        copier = threading.Thread(target=files.copy, args=(files.model_names("_mul"), files.model_names()),
                                  name="nnvts-cache-copier")
        handles = files.handles()
        copier.start()
        try:
            if racing_save:
                run.save(add, handles)
            else:
                status, prepared = run.retrieve(handles)
        finally:
            copier.join()
        files.close_fds()
        if racing_save:
            status, prepared = run.retrieve(files.handles())
        if prepared is None:
            continue
        restored += 1
        problems = run.evaluate(add, prepared, f"iteration {iteration}")
        if problems:
            return failed(f"iteration {iteration}: a model restored while another model's cache was being copied "
                          "in does not compute the ADD chain", tuple(problems))
    return passed(f"{restored}/{TOCTOU_ITERATIONS} restored, every one computing the ADD chain")


# ---------------------------------------------------------------------------
# CompilationCachingSecurityTest


def _security_test(test: str, run: _Run, model: CaseModel, rng: np.random.Generator) -> Outcome:
    if not run.caching:
        return skipped("caching unsupported (get_number_of_cache_files_needed answered 0, 0)")
    if ("model_cache" in test and run.n_model == 0) or ("data_cache" in test and run.n_data == 0):
        return skipped("the driver uses no cache file of that kind")
    files = run.files
    run.save(model, files.handles())
    files.close_fds()
    token = bytearray(run.token)
    if test == "wrong_token":
        token[int(rng.integers(len(token)))] ^= 1 << int(rng.integers(8))
    targets = files.model_names() if "model_cache" in test else files.data_names() if "data_cache" in test else []
    for name in targets:
        if test.startswith("corrupted"):
            files.flip_random_bit(name, rng)
        else:
            files.append_random_bytes(name, rng)
    status, prepared = run.retrieve(files.handles(), bytes(token))
    if "data_cache" in test:
        if prepared is None:
            return passed(f"refused ({status.name})")
        # Not security sensitive: wrong values are tolerated, a crash is not.
        answer = _run_once(run, model, prepared)
        return passed(f"restored; execution answered {answer}")
    if prepared is not None:
        problems = run.evaluate(model, prepared, "restored model")
        outputs = "its outputs are wrong" if problems else "its outputs happen to be right"
        return failed(f"{test.replace('_', ' ')}: prepare_model_from_cache restored a model ({outputs}); the model "
                      "cache must be verified and refused with GENERAL_FAILURE", tuple(problems))
    return passed(status.name) if status == GF else failed(
        f"{test.replace('_', ' ')}: prepare_model_from_cache answered {status.name}, expected GENERAL_FAILURE")


def _run_once(run: _Run, model: CaseModel, prepared: PreparedModel) -> str:
    built = build_request(model, model.examples[0], run.options.pool_kind, extensions=run.options.extensions)
    try:
        return execute(prepared, built.request, Executor.SYNC).status.name
    finally:
        built.close()


# ---------------------------------------------------------------------------
# The family


def _cache_counts(device: Device) -> tuple[int, int]:
    try:
        counts = device.get_number_of_cache_files_needed()
    except DriverError as error:
        raise CaseFailure(f"get_number_of_cache_files_needed returned {error.status.name}") from None
    n_model, n_data = counts
    for count in counts:
        if not isinstance(count, int) or not 0 <= count <= MAX_NUMBER_OF_CACHE_FILES:
            raise CaseFailure(f"cache file counts {counts!r} must be integers in [0, {MAX_NUMBER_OF_CACHE_FILES}]")
    return n_model, n_data


def _seeded(name: str, seed: int) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


@register_family
class CachingFamily(Family):
    name = "caching"
    description = "compilation caching: restored models are correct; bad handles, corrupted, replaced or raced " \
                  "caches are refused"

    def device_cases(self) -> Iterator[Case]:
        return (make() for _, make in self._named_cases())

    def selected_device_cases(self, selects: Callable[[str], bool]) -> Iterator[Case]:
        # The MobileNet models and their goldens cost a second to build: only for a selected case.
        return (make() for name, make in self._named_cases() if selects(name))

    def _named_cases(self) -> Iterator[tuple[str, Callable[[], Case]]]:
        """(name, a function making the case) of every device-level case, in order."""

        def case(name: str, model: Callable[[], CaseModel] | None = None, **config: object) -> \
                tuple[str, Callable[[], Case]]:
            if model is None:
                return name, lambda: Case(name, self.name, config=config)
            return name, lambda: Case(name, self.name, model(), 0, "", config)

        yield case(f"{self.name}/number_of_cache_files", kind="counts")
        for quantized in (False, True):
            label = "quant8" if quantized else "float32"

            def model(quantized: bool = quantized) -> CaseModel:
                return mobilenet(quantized)

            def chained(quantized: bool = quantized) -> CaseModel:
                return chain("ADD", quantized)

            for test in MOBILENET_TESTS:
                yield case(f"{self.name}/mobilenet_{label}.{test}", model, kind="mobilenet", test=test,
                           quantized=quantized)
            for test in CHAIN_TESTS:
                yield case(f"{self.name}/chain_{label}.{test}", chained, kind="chain", test=test,
                           quantized=quantized)
            for test in SECURITY_TESTS:
                for seed in SEEDS:
                    yield case(f"{self.name}/mobilenet_{label}.{test}.seed{seed}", model, kind="security",
                               test=test, quantized=quantized, seed=seed)

    def run(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        n_model, n_data = _cache_counts(device)
        config = case.config
        with cf.CacheDir(n_model, n_data) as files:
            run = _Run(device, options, n_model, n_data, files)
            if config["kind"] == "counts":
                return self._counts(run)
            if config["kind"] == "chain":
                return _chain_test(config["test"], run, config["quantized"])
            model = mobilenet(config["quantized"])
            if run.caching or config["kind"] == "mobilenet":
                why = run.fully_supported(model)
                if why:
                    return skipped(why)
            if config["kind"] == "mobilenet":
                return _mobilenet_test(config["test"], run, model)
            return _security_test(config["test"], run, model, _seeded(case.name, config["seed"]))

    def _counts(self, run: _Run) -> Outcome:
        if run.caching:
            return passed(f"model {run.n_model}, data {run.n_data}")
        status, prepared = run.retrieve(cf.Handles([], []))
        problem = _refused(status, prepared, (GF,), "caching unsupported (0, 0)")
        return failed(problem) if problem else passed("caching unsupported; prepare_model_from_cache answered "
                                                      "GENERAL_FAILURE as required")
