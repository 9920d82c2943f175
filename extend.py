"""crossgrad's extension points: the public names for code that adds to crossgrad.

- **A backend** (docs/backends.md): an object with the `Backend` protocol's members, added
  with `register_backend` and then cross-checked like the built-in ones. `Adapter`,
  `emitter` and `make_get` build its op from a framework's custom-gradient mechanism;
  `check_run` does an ``evaluate``'s first checks; `ArraySpec` is what ``spec_of`` returns.
- **A row kind** (docs/cross-check.md): a `RowKind` in a `Scope`, added with
  `register_row_kind`; its function gets the scope's record (`ReferenceRun`, `ModeRun`,
  `DeviceRun`) and makes rows with its `RowContext`.
- **A kernel** (docs/kernels.md): `register_kernel` adds a hand-written implementation of a
  registered op to a backend, checked like the op crossgrad emits.
- **A diagnosis kind** (docs/cross-check.md): a function of a failing `Row` and its op
  returning a `Diagnosis` (its ``kind`` a string of one's own) or None, added with
  `register_diagnosis` and tried before the built-in diagnoses.

Everything else in crossgrad's subpackages is internal: it may change without notice.
"""

from crossgrad.backends.common.base import make_get
from crossgrad.backends.common.base import register as register_backend
from crossgrad.backends.common.base import unregister as unregister_backend
from crossgrad.backends.common.op_core import Adapter, check_run, emitter
from crossgrad.backends.common.protocol import Backend
from crossgrad.checker.diagnosis.causes import register_diagnosis, unregister_diagnosis
from crossgrad.checker.diagnosis.kinds import Diagnosis, Kind
from crossgrad.checker.report import Row, RowContext
from crossgrad.checker.rows import RowKind, Scope
from crossgrad.checker.rows import register as register_row_kind
from crossgrad.checker.rows import unregister as unregister_row_kind
from crossgrad.checker.rows.setting import DeviceRun, ModeRun, ReferenceRun
from crossgrad.registry.kernels import kernels, register_kernel, unregister_kernel
from crossgrad.registry.validation import ArraySpec

__all__ = [
    "Adapter", "ArraySpec", "Backend", "DeviceRun", "Diagnosis", "Kind", "ModeRun",
    "ReferenceRun", "Row", "RowContext", "RowKind", "Scope", "check_run", "emitter",
    "kernels", "make_get", "register_backend", "register_diagnosis", "register_kernel",
    "register_row_kind", "unregister_backend", "unregister_diagnosis", "unregister_kernel",
    "unregister_row_kind",
]
