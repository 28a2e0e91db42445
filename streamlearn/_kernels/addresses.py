"""Arrays passed by address: several arrays as one int64 array for the per-example kernels.

A compiled call converts each array argument on every call (about 10 to 15 ns each
beside the call's own 40 to 50): with the learner's six arrays and the averaged weights,
most of what a river example's kernel call costs. An :class:`AddressTable` writes the
address and length of each array into one int64 array, which the kernel reads back as
the same arrays with :func:`array_at`: one array converted per call.

The kernel trusts the table: the addresses must be those of live arrays of the dtypes
it reads. :class:`AddressTable` checks the dtypes and layout once, when it is made, and
keeps the arrays themselves, so that memory stays allocated for as long as the table
exists; a caller that replaces one of the arrays (a grown arena) makes a new table.
"""

from __future__ import annotations

import ctypes
import importlib
from typing import Any

import numpy as np
import numpy.typing as npt

from streamlearn._kernels._jit import intrinsic

#: int64 cells of the table per array: its address, then its length
CELLS = 2


@intrinsic
def array_at(typingctx: Any, address: Any, length: Any, dtype: Any) -> Any:
    """The one-dimensional C-contiguous array of ``length`` items of ``dtype`` (a numpy
    scalar class such as ``np.float64``) at ``address``: a view of memory someone else
    owns (no reference counting, as the kernels compiled without it take arrays)."""
    # untyped: numba has no stubs
    types: Any = importlib.import_module("numba.core.types")
    cgutils: Any = importlib.import_module("numba.core.cgutils")

    item = dtype.instance_type
    array_type = types.Array(item, 1, "C")

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        # numba's array struct, field by field: no meminfo nor parent (null), the data
        # at the address, one dimension of the length, the item's size as its stride
        model = context.data_model_manager[array_type]
        itemsize = context.get_constant(
            types.intp, context.get_abi_sizeof(context.get_data_type(item))
        )
        fields = {
            "nitems": args[1],
            "itemsize": itemsize,
            "data": builder.inttoptr(args[0], context.get_value_type(types.CPointer(item))),
            "shape": cgutils.pack_array(builder, [args[1]]),
            "strides": cgutils.pack_array(builder, [itemsize]),
        }
        value = cgutils.get_null_value(context.get_value_type(array_type))
        for name, field in fields.items():
            value = builder.insert_value(value, field, model.get_field_position(name))
        return value

    return array_type(types.int64, types.int64, dtype), codegen


def address(array: npt.NDArray[Any]) -> int:
    """Where ``array``'s data starts (a ctypes object over its buffer finds it four times
    as fast as ``array.ctypes``; an empty array has no byte to put one over)."""
    try:
        buffer: Any = array  # numpy's stubs do not say that arrays are buffers
        return ctypes.addressof(ctypes.c_char.from_buffer(buffer))
    except (TypeError, ValueError):
        return int(array.ctypes.data)


def kernel_ready(array: npt.NDArray[Any], dtype: Any) -> bool:
    """Whether the kernels may read and write ``array`` in place as a one-dimensional
    array of ``dtype``: of that dtype, C-contiguous, aligned and writeable."""
    flags = array.flags
    return bool(
        array.dtype == dtype
        and array.ndim == 1
        and flags.c_contiguous
        and flags.writeable
        and flags.aligned
    )


class AddressTable:
    """The addresses and lengths of ``arrays`` (one-dimensional, C-contiguous, aligned,
    writeable, of ``dtypes`` in order) in the int64 array :attr:`table`, ``CELLS`` cells
    an array, then ``extra`` cells the caller may use; the arrays kept alive with it."""

    def __init__(
        self, arrays: tuple[np.ndarray, ...], dtypes: tuple[Any, ...], extra: tuple[int, ...] = ()
    ) -> None:
        if len(arrays) != len(dtypes):
            raise ValueError(f"{len(arrays)} arrays for {len(dtypes)} dtypes")
        cells: list[int] = []
        for array, dtype in zip(arrays, dtypes, strict=True):
            if not kernel_ready(array, dtype):
                raise ValueError(f"an array is {array.dtype}[{array.shape}], not {np.dtype(dtype)}")
            cells += [address(array), array.shape[0]]
        self.arrays = arrays
        self.dtypes = dtypes
        self.extra = extra
        #: ``[address_0, length_0, address_1, length_1, ..., *extra]``
        self.table: npt.NDArray[np.int64] = np.array([*cells, *extra], dtype=np.int64)

    def __reduce__(self) -> tuple[Any, ...]:
        """A copy (``copy``, ``pickle``) is made anew from the copies of the arrays: the
        addresses are this process's and these arrays'."""
        return AddressTable, (self.arrays, self.dtypes, self.extra)
