"""The one exception crossgrad raises for bad definitions, bad input and failed checks."""

from __future__ import annotations

from typing import Any


class CrossgradError(ValueError):
  """A crossgrad error that names the op, the backend and the argument at fault.

  The message reads ``[crossgrad] op 'NAME' (BACKEND), ARGUMENT: PROBLEM:
  expected EXPECTED, got ACTUAL. HINT``; each part appears only when known.
  The parts stay available as attributes so callers can react to them.
  """

  # TensorFlow's AutoGraph otherwise re-raises errors from inside a tf.function as a
  # StagingError; with this marker a CrossgradError reaches the caller as itself.
  ag_pass_through = True

  def __init__(
      self,
      problem: str,
      *,
      op: str | None = None,
      backend: str | None = None,
      argument: str | None = None,
      expected: Any = None,
      actual: Any = None,
      hint: str | None = None,
  ):
    self.problem = problem
    self.op = op
    self.backend = backend
    self.argument = argument
    self.expected = expected
    self.actual = actual
    self.hint = hint
    # The message as the exception's args, set rather than passed to super().__init__:
    # Dynamo (torch.compile) cannot trace that call, and a CrossgradError raised while it
    # traces with fullgraph=True would be reported as that failure instead of by name.
    self.args = (self._format(),)

  def __reduce__(self):
    """Pickles as its parts (across processes), not as the message, which unpickling
    would take for the problem and prefix again."""
    parts = {"op": self.op, "backend": self.backend, "argument": self.argument,
             "expected": self.expected, "actual": self.actual, "hint": self.hint}
    return _rebuilt, (type(self), self.problem, parts)

  def _format(self) -> str:
    where = []
    if self.op is not None:
      where.append(f"op '{self.op}'" + (f" ({self.backend})" if self.backend else ""))
    elif self.backend is not None:
      where.append(f"backend {self.backend}")
    if self.argument is not None:
      where.append(self.argument)
    text = "[crossgrad] " + (", ".join(where) + ": " if where else "") + self.problem
    # Parts that already start with their word (a wrapped message: "got an unexpected
    # keyword argument") do not get it twice.
    expected, actual = (_after(v, word) for v, word in ((self.expected, "expected"),
                                                         (self.actual, "got")))
    if expected is not None and actual is not None:
      text += f": expected {expected}, got {actual}"
    elif expected is not None:
      text += f": expected {expected}"
    elif actual is not None:
      text += f": got {actual}"
    if self.hint:
      text += f". {self.hint}"
    return text

  def located(self, *, op: str | None = None, backend: str | None = None) -> CrossgradError:
    """Returns this error with the op and backend filled in where still unknown."""
    return CrossgradError(
        self.problem,
        op=self.op or op,
        backend=self.backend or backend,
        argument=self.argument,
        expected=self.expected,
        actual=self.actual,
        hint=self.hint,
    )


def _after(value: Any, word: str) -> Any:
  """``value`` without a leading ``word`` (as text), or unchanged."""
  if isinstance(value, str) and value.startswith(word + " "):
    return value[len(word) + 1:]
  return value


def _rebuilt(cls: type, problem: str, parts: dict) -> CrossgradError:
  """A pickled `CrossgradError` (or subclass) from its parts."""
  return cls(problem, **parts)
