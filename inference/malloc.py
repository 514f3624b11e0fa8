"""Keep freed memory for reuse in a decoding worker (glibc's malloc only).

Every decoding step allocates and frees the same few tensors of megabytes (the output layer's
scores over the vocabulary and their log-probabilities: 160 beams x 8,000 floats = 5 MB). glibc
serves blocks that large straight from the kernel and hands them back when freed, so each step
faults its pages in again, zero-filled: ~230 page faults a step on the compact model. Raising
the two thresholds keeps such blocks in the process, where the next step reuses them. Only a
worker process of our own is changed (workers.py), never the process of someone who imports
the library.
"""

import ctypes
import ctypes.util
import platform

M_TRIM_THRESHOLD = -1  # free memory at the heap's top kept before it is returned to the kernel
M_MMAP_THRESHOLD = -3  # requests from this size up get their own mapping from the kernel
KEEP_BYTES = 256 * 2**20  # well above a decoding step's largest tensor


def keep_freed_memory() -> bool:
    """Raise glibc's trim and mmap thresholds in this process; False where malloc is not glibc's
    (another libc, or tcmalloc or mimalloc preloaded: they keep freed memory already)."""
    if platform.libc_ver()[0] != "glibc":
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    first = ctypes.cast(ctypes.CDLL(None).malloc, ctypes.c_void_p).value  # the malloc this process calls
    if first != ctypes.cast(libc.malloc, ctypes.c_void_p).value:  # another one came first (LD_PRELOAD)
        return False
    return bool(libc.mallopt(M_MMAP_THRESHOLD, KEEP_BYTES)) and bool(libc.mallopt(M_TRIM_THRESHOLD, KEEP_BYTES))
