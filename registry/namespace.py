"""The namespace ``xp`` that op definitions are written against: the Python Array API standard.

Every backend's ``xp`` is a namespace of the Python Array API standard, revision 2024.12
(https://data-apis.org/array-api/2024.12/): the functions of `STANDARD` (by the standard's
categories, each documented on the standard's page for it), the dtype objects of `DTYPES`
(``xp.float32`` compares equal to the dtype of that backend's float32 arrays), the
`CONSTANTS`, ``xp.linalg`` (`LINALG`), ``__array_api_version__ == "2024.12"`` and
``__array_namespace_info__()``; ``xp.fft`` (`FFT`) where the backend's library has it.
Arrays stay the framework's own arrays, with their operators (``+ - * / ** @``,
comparisons, indexing) and ``.shape`` / ``.dtype``.

Next to the standard, crossgrad adds the `EXTENSIONS`, with rules that hold alike in
every backend, device and compilation mode. Any other name raises a `CrossgradError`
that points at both lists, so an op written against ``xp`` means the same everywhere.

Bad indices: every crossgrad op that indexes reads an index outside ``[0, n)`` -
negative ones included - as a zero value (and so sends it no gradient). Frameworks
disagree there (TensorFlow's `tf.gather` raises on CPU, returns zeros on GPU and clamps
under XLA; `jnp.take` wraps negative indices and fills NaN; NumPy raises), so
crossgrad's ``xp.take`` implements the rule the same way everywhere and never raises on
data. It keeps the standard's signature and results for indices in ``[0, n)``; unlike
the standard's `take`, a negative index reads zero instead of counting from the end.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

from crossgrad.registry.errors import CrossgradError

VERSION = "2024.12"
URL = f"https://data-apis.org/array-api/{VERSION}/"

# The standard's functions by category: name -> the standard's page documenting them.
STANDARD: dict[str, tuple[str, ...]] = {
    "API_specification/elementwise_functions.html": (
        "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh",
        "bitwise_and", "bitwise_left_shift", "bitwise_invert", "bitwise_or",
        "bitwise_right_shift", "bitwise_xor", "ceil", "clip", "conj", "copysign", "cos",
        "cosh", "divide", "equal", "exp", "expm1", "floor", "floor_divide", "greater",
        "greater_equal", "hypot", "imag", "isfinite", "isinf", "isnan", "less", "less_equal",
        "log", "log1p", "log2", "log10", "logaddexp", "logical_and", "logical_not",
        "logical_or", "logical_xor", "maximum", "minimum", "multiply", "negative",
        "nextafter", "not_equal", "positive", "pow", "real", "reciprocal", "remainder",
        "round", "sign", "signbit", "sin", "sinh", "square", "sqrt", "subtract", "tan",
        "tanh", "trunc"),
    "API_specification/creation_functions.html": (
        "arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like",
        "linspace", "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like"),
    "API_specification/data_type_functions.html": (
        "astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type"),
    "API_specification/indexing_functions.html": ("take", "take_along_axis"),
    "API_specification/inspection.html": ("__array_namespace_info__",),
    "API_specification/linear_algebra_functions.html": (
        "matmul", "matrix_transpose", "tensordot", "vecdot"),
    "API_specification/manipulation_functions.html": (
        "broadcast_arrays", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis",
        "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile", "unstack"),
    "API_specification/searching_functions.html": (
        "argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where"),
    "API_specification/set_functions.html": (
        "unique_all", "unique_counts", "unique_inverse", "unique_values"),
    "API_specification/sorting_functions.html": ("argsort", "sort"),
    "API_specification/statistical_functions.html": (
        "cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var"),
    "API_specification/utility_functions.html": ("all", "any", "diff"),
}
FUNCTIONS: tuple[str, ...] = tuple(name for names in STANDARD.values() for name in names)

# https://data-apis.org/array-api/2024.12/API_specification/data_types.html
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64", "complex64", "complex128")
# https://data-apis.org/array-api/2024.12/API_specification/constants.html
CONSTANTS = ("e", "inf", "nan", "newaxis", "pi")

# https://data-apis.org/array-api/2024.12/extensions/linear_algebra_functions.html
LINALG = ("cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul",
          "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr",
          "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot", "vector_norm")
# https://data-apis.org/array-api/2024.12/extensions/fourier_transform_functions.html
# (optional: present where the backend's library has it).
FFT = ("fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
       "fftfreq", "rfftfreq", "fftshift", "ifftshift")

# crossgrad's own functions, the same in every backend, device and compilation mode.
EXTENSIONS: dict[str, str] = {
    "take": "take(x, indices, /, *, axis=None): the standard's take (axis may be left out "
            "only for 1-D x), with crossgrad's bad-index rule: zeros where an index is "
            "outside [0, x.shape[axis]), negative ones included, never an error or NaN. "
            "Indices may have any shape (the result has x.shape[:axis] + indices.shape + "
            "x.shape[axis + 1:]), as for numpy.take.",
    "segment_sum": "segment_sum(data, segment_ids, /, num_segments): sums of the rows of "
                   "data (along axis 0) with the same id; rows with an id outside "
                   "[0, num_segments) are dropped, so it is the transpose of take.",
    "segment_min": "segment_min(data, segment_ids, /, num_segments): as segment_sum, with "
                   "minima; empty segments hold the dtype's largest finite value.",
    "one_hot": "one_hot(x, num_classes, /, *, dtype): integer x (...) -> (..., num_classes) "
               "of dtype, 1 where x == k; all zeros where x is outside [0, num_classes).",
    "unbroadcast": "unbroadcast(x, like, /): x summed over the axes along which like was "
                   "broadcast to x's shape, so the result has like's shape (the adjoint of "
                   "broadcast_to, for cotangents of broadcast inputs).",
    "erf": "erf(x, /): the error function of real floating x, elementwise, in x's dtype: "
           "2 / sqrt(pi) times the integral of exp(-t**2) from 0 to x (exact GELU is "
           "x * (1 + erf(x / sqrt(2))) / 2).",
}


# NumPy's names for functions the standard names otherwise (what crossgrad's xp offered).
RENAMED = {"concatenate": "concat", "cumsum": "cumulative_sum",
           "transpose": "permute_dims or matrix_transpose", "left_shift": "bitwise_left_shift",
           "right_shift": "bitwise_right_shift", "power": "pow", "arccos": "acos",
           "arcsin": "asin", "arctan": "atan", "arctan2": "atan2", "invert": "bitwise_invert"}
_HINTS = {
    "xp": f"xp is the Python Array API standard {VERSION} ({URL}) plus crossgrad's extensions "
          + ", ".join(EXTENSIONS) + " (see crossgrad.registry.namespace, docs/array-api.md)",
    "xp.linalg": f"xp.linalg is the standard's linalg extension "
                 f"({URL}extensions/linear_algebra_functions.html): " + ", ".join(LINALG),
    "xp.fft": f"xp.fft is the standard's fft extension "
              f"({URL}extensions/fourier_transform_functions.html)",
}


class UnknownName(CrossgradError, AttributeError):
  """A name outside the namespace: a `CrossgradError`, and an `AttributeError` so that
  ``hasattr(xp, name)`` works as code written for the standard expects."""


class _Group:
  """Names copied from ``source`` at construction (no per-call wrapper); others raise."""

  def __init__(self, label: str, backend: str, names: Iterable[str], source: Any,
               own: Mapping[str, Any]):
    self._label, self._backend = label, backend
    self._names = tuple(names)
    self._missing = tuple(n for n in self._names if n not in own and not hasattr(source, n))
    for name in self._names:
      if name not in self._missing:
        setattr(self, name, own[name] if name in own else getattr(source, name))

  @property
  def missing(self) -> tuple[str, ...]:
    """Names of the standard this backend does not provide (empty for a complete one)."""
    return self._missing

  def __getattr__(self, name: str):
    if name.startswith("__") and name.endswith("__"):
      raise AttributeError(name)
    where = f"{self._label}.{name}"
    if name in self._missing:
      raise UnknownName(f"{where} is in the Array API standard {VERSION} but this backend "
                        "does not implement it yet", backend=self._backend, argument=where,
                        hint=_HINTS[self._label])
    if where == "xp.fft":
      raise UnknownName("xp.fft (optional in the standard) is not provided by this backend",
                        backend=self._backend, argument=where, hint=_HINTS["xp.fft"])
    renamed = f"; the standard calls it {RENAMED[name]}" if self._label == "xp" and (
        name in RENAMED) else ""
    raise UnknownName(f"{where} is not in crossgrad's op namespace{renamed}",
                      backend=self._backend, argument=where, hint=_HINTS[self._label])

  def __dir__(self):
    return sorted(set(self._names) - set(self._missing))

  def __repr__(self) -> str:
    return f"<crossgrad {self._backend} {self._label}>"


class Namespace(_Group):
  """A backend's ``xp``: its library's Array API namespace plus crossgrad's extensions.

  Args:
    backend: the backend's name, for errors (and ``xp.backend``).
    standard: the library's conforming namespace (a module): the standard's names are
      copied from it, ``linalg`` and (if present) ``fft`` restricted to theirs.
    extensions: one callable per name of `EXTENSIONS`, exactly.
    overrides: standard names implemented other than by ``standard``'s attribute (where
      the library departs from the standard).
  """

  def __init__(self, backend: str, standard: Any, extensions: Mapping[str, Callable[..., Any]],
               overrides: Mapping[str, Any] | None = None):
    missing = sorted(set(EXTENSIONS) - set(extensions))
    extra = sorted(set(extensions) - set(EXTENSIONS))
    if missing or extra:
      raise CrossgradError("extensions do not match crossgrad's documented list",
                           backend=backend, argument="extensions", expected=", ".join(EXTENSIONS),
                           actual=f"missing {missing}, extra {extra}")
    own = {**(overrides or {}), **extensions}
    if hasattr(standard, "linalg"):
      own["linalg"] = _Group("xp.linalg", backend, LINALG, standard.linalg, {})
    if hasattr(standard, "fft"):
      own["fft"] = _Group("xp.fft", backend, FFT, standard.fft, {})
    names = FUNCTIONS + DTYPES + CONSTANTS + tuple(EXTENSIONS) + ("linalg",)
    super().__init__("xp", backend, names + (("fft",) if "fft" in own else ()), standard, own)
    self.__array_api_version__ = VERSION
    self.__name__ = f"crossgrad.{backend}.xp"

  @property
  def backend(self) -> str:
    return self._backend


def check_segment_ids(backend: str, name: str, data_shape: Sequence[int | None],
                      ids_shape: Sequence[int | None]) -> None:
  """What ``segment_sum`` and ``segment_min`` reduce: the rows of ``data`` (axis 0), one
  id each, so ``segment_ids`` is 1-D with a length of ``data.shape[0]`` (None: unknown)."""
  rows = data_shape[0] if len(data_shape) else None
  if not (len(data_shape) and len(ids_shape) == 1
          and (None in (rows, ids_shape[0]) or ids_shape[0] == rows)):
    raise CrossgradError(f"xp.{name} reduces the rows of data (axis 0), one id per row",
                         backend=backend, argument="segment_ids",
                         expected=f"shape ({rows},) for data of shape {tuple(data_shape)}",
                         actual=f"shape {tuple(ids_shape)}")


def take_axis(backend: str, ndim: int, axis: int | None) -> int:
  """The non-negative axis of ``take(x, indices, axis=axis)`` for an ``ndim``-D ``x``."""
  if axis is None and ndim == 1:
    return 0
  if axis is None or not -ndim <= axis < ndim:
    raise CrossgradError("xp.take needs an axis of x (it may be left out only for 1-D x)",
                         backend=backend, argument="axis", expected=f"in [{-ndim}, {ndim})",
                         actual=f"{axis} for a {ndim}-D x")
  return axis % ndim
