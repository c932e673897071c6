"""The dtype vocabulary of phasegate contracts and .npy I/O, numpy only.

phasegate writes bfloat16 as '<u2' (the raw 16 bits; numpy has no bfloat16 and rejects
extra header keys), so a bfloat16 tensor is a uint16 array of bits here. to_bf16_bits /
from_bf16_bits convert between float32 values and those bits (round to nearest even)."""
import numpy as np

BFLOAT16 = "bfloat16"

# contract dtype name -> numpy dtype (bfloat16: its bits, uint16)
DTYPES = {
    "float32": np.float32, "float16": np.float16, "float64": np.float64,
    "bfloat16": np.uint16,
    "int8": np.int8, "uint8": np.uint8, "int32": np.int32, "int64": np.int64,
    "int": np.int64, "bool": np.bool_,
}


def numpy_dtype(name):
    """The numpy dtype a tensor of contract dtype `name` is stored with (bfloat16: uint16)."""
    dt = DTYPES.get(name)
    if dt is None:
        raise ValueError(f"dtype '{name}' is not in phasegate's vocabulary ({sorted(DTYPES)})")
    return np.dtype(dt)


def dtype_name(dt):
    """The contract name of a numpy dtype ('uint16' stays itself: it may be bfloat16 bits
    or not, only the caller knows); its numpy name when phasegate has none."""
    dt = np.dtype(dt)
    for name, t in DTYPES.items():
        if name not in ("int", BFLOAT16) and np.dtype(t) == dt:
            return name
    return dt.name


def to_bf16_bits(a):
    """float values -> bfloat16 bits (uint16), round to nearest even; NaN stays NaN."""
    f = np.ascontiguousarray(np.asarray(a, dtype=np.float32))
    u = f.view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(f)
    if nan.any():
        rounded = np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), rounded)
    return rounded.astype(np.uint16)


def from_bf16_bits(bits):
    """bfloat16 bits (uint16) -> float32 values (exact)."""
    b = np.ascontiguousarray(np.asarray(bits, dtype=np.uint16))
    return (b.astype(np.uint32) << 16).view(np.float32)


def load(path):
    """A .npy file as a numpy array (bfloat16 stays uint16 bits)."""
    return np.load(path, allow_pickle=False)


def save(path, array):
    """Writes array to path as .npy (C order, no pickle)."""
    np.save(path, np.ascontiguousarray(array), allow_pickle=False)


def cast(array, name):
    """array cast to contract dtype `name` (bfloat16: rounded to its bits)."""
    if name == BFLOAT16:
        a = np.asarray(array)
        return a if a.dtype == np.uint16 else to_bf16_bits(a)
    return np.asarray(array).astype(numpy_dtype(name))
