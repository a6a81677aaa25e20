// NumPy's .npy files (numpy.save / numpy.load, format versions 1.0, 2.0 and 3.0): one array.
//
//   // ["\x93NUMPY"][major][minor][header length: u16 LE (1.0) or u32 LE (2.0, 3.0)]
//   // [header: a Python dict literal, space-padded, '\n'-terminated, so the data starts on a
//   //  64-byte boundary]  {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
//   // [the elements, row-major]
//
// dtypes: <f4 <f8 <f2 <i8 <i4 |u1 |b1 (float32, float64, float16, int64, int32, uint8, bool).
// Big-endian files ('>f4') are byte-swapped as they are read, Fortran-order files transposed
// into row-major: the tensor is always the array numpy.load would return. 0-d arrays (shape ())
// are 0-d tensors; a bool byte other than 0 reads as true, as in numpy. bfloat16 is not a numpy
// dtype: write_npy refuses it (convert to float32), and read_npy refuses the '<V2' that ml_dtypes'
// bfloat16 arrays are saved as.
//
//   #include "athanor/io/npy.h"
//   Tensor x = randn({2, 3});
//   write_npy("x.npy", x);                  // what numpy.save writes, atomically
//   Tensor y = read_npy("x.npy");           // numpy.load("x.npy") reads it back the same
//   assert(equal(x, y) && y.dtype() == kFloat32);
//
// Nothing read is trusted: a truncated file, a header that lies about the data's size, a shape
// whose product overflows, a malformed dict, an unsupported dtype or bytes after the array (numpy
// ignores them; they are most likely a second array appended to the file, which read_npy would
// silently drop) are an ath::FormatError naming the file and the fault, never an out-of-bounds
// read.
#pragma once

#include <string>

#include "athanor/tensor/tensor.h"

namespace ath {

// The array in `path` as a new contiguous tensor. A missing or unreadable file is an IOError;
// bad contents a FormatError ("<path>: <what is wrong>").
Tensor read_npy(const std::string& path);

// Writes t (any layout; the file is row-major) as numpy.save would: format 1.0, or 2.0 when the
// header is longer than 65535 bytes. Atomic: a temporary file renamed over `path`. A bfloat16
// tensor is a DTypeError (numpy has no bfloat16).
void write_npy(const std::string& path, const Tensor& t);

// The numpy descr of a dtype ('<f4', '|b1', ...); DTypeError for bfloat16.
std::string npy_descr(DType dtype);

}  // namespace ath
