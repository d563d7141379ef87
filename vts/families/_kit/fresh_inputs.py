"""Two preparations of one model compared on inputs the spec author did not pick.

A spec's golden inputs are often small integers, exact in float16: a driver
that computes float32 in float16 for one preparation (LOW_POWER, say) gives
the golden answer on them and is caught only by real-valued data.  So a
preparation whose arguments must not change the answer is also executed on
random inputs (drawn as the ``differential`` family draws them: in the
range the examples span, reproducible from a seed) and its outputs are
compared with those of the FAST_SINGLE_ANSWER preparation of the same model
on the same driver, with the model's own tolerance.  The reference answer
comes from the driver itself, never from the reference driver, so the check
is about consistency between preparations, which the HAL requires
(``relaxComputationFloat32toFloat16`` is the only licence to compute float32
in float16, and it belongs to the model, not to a preparation argument).
"""

from __future__ import annotations

import numpy as np

from vts.families._kit.executions import Executor, answer_outputs, execute
from vts.families._kit.judge import compare_outputs
from vts.families._kit.random_inputs import plan_inputs, random_example, seed_of
from vts.families.base import RunOptions
from vts.hal.enums import OperationType
from vts.hal.interfaces import PreparedModel
from vts.model.casemodel import CaseExample, CaseModel, build_request

#: Random input sets each preparation is compared on.
DRAWS = 2


def differences_on_fresh_inputs(model: CaseModel, prepared: PreparedModel, baseline: PreparedModel,
                                options: RunOptions, seed_name: str, how: str) -> list[str]:
    """Problems of ``prepared`` against ``baseline`` (FAST_SINGLE_ANSWER) on ``DRAWS`` random input sets.

    Nothing to compare (no input may vary, a sampling model, or the baseline itself refuses the drawn
    inputs: random inputs may leave a driver's domain, and the baseline is judged elsewhere) is no problem.
    """
    plan = plan_inputs(model)
    if not plan.any_varied or int(OperationType.RANDOM_MULTINOMIAL) in model.operation_types():
        return []
    rng = np.random.Generator(np.random.PCG64(seed_of(seed_name)))
    sized = model.examples[0]
    for draw in range(DRAWS):
        drawn = random_example(model, plan, rng, f"fresh{draw}")
        drawn = CaseExample(drawn.name, drawn.inputs, sized.outputs)
        first = build_request(model, drawn, options.pool_kind, extensions=options.extensions)
        try:
            expected_answer = execute(baseline, first.request, Executor.SYNC, timeout=options.case_timeout)
            if not expected_answer.ok:
                continue
            expected = CaseExample(drawn.name, drawn.inputs, answer_outputs(model, first, expected_answer, sized))
        finally:
            first.close()
        second = build_request(model, expected, options.pool_kind, extensions=options.extensions)
        try:
            answer = execute(prepared, second.request, Executor.SYNC, timeout=options.case_timeout)
            where = f"the model {how}, on random inputs (set {draw}), against its FAST_SINGLE_ANSWER preparation"
            if not answer.ok:
                return [f"{where}: returned {answer.status.name} where FAST_SINGLE_ANSWER succeeded"]
            problems = [c.describe() for c in compare_outputs(model, expected, second) if not c.passed]
            if problems:
                return [f"{where}: {problem}" for problem in problems]
        finally:
            second.close()
    return []
