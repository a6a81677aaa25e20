// Opening a path that should hold data. A FIFO (named pipe) blocks open(2) until a writer
// appears — forever, for a path mistyped onto one — and a directory or device is no data file
// either. These check the file type before anything can block:
//
//   #include <fstream>
//   #include <unistd.h>
//   std::string path = "data.csv";
//   std::ofstream(path) << "x\n1\n";
//   int fd = ath::open_regular_file(path, "CsvDataset");   // IOError unless a regular file
//   ::close(fd);                                           // the caller owns the descriptor
//   ath::require_regular_file(path, "config file");        // for readers that open by name
//   assert(ath::regular_file_problem(".") != "");          // a directory: both throw IOError
#pragma once

#include <string>
#include <string_view>

namespace ath {

// open(path, O_RDONLY | O_CLOEXEC) without blocking on a FIFO: the caller owns the returned
// descriptor. Throws IOError ("<what>: cannot read '<path>': ...") for a missing file, a FIFO,
// a directory or a device.
int open_regular_file(const std::string& path, std::string_view what = {});

// Throws the same IOError unless path (symlinks followed) is a regular file, without opening it.
void require_regular_file(const std::string& path, std::string_view what = {});

// Why path (symlinks followed) is not a readable regular file ("No such file or directory",
// "a FIFO (named pipe)", ...), or "" when it is one. Does not open it.
std::string regular_file_problem(const std::string& path);

}  // namespace ath
