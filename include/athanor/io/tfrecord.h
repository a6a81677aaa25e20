// TFRecord framing: the container of TensorBoard's event files (and of TensorFlow's .tfrecord
// data). Each record is
//
//   // u64 length | u32 masked_crc32c(length) | payload[length] | u32 masked_crc32c(payload)
//
// little-endian, with CRC-32C (Castagnoli) "masked" as TensorFlow does so that a CRC stored inside
// checksummed data does not checksum to a fixed value.
//
//   #include <fstream>
//   std::string event_bytes = "a serialized Event";
//   std::string record = ath::tfrecord(event_bytes);           // append to an events file
//   std::ofstream("events.out.tfevents.1.host.2.0", std::ios::binary) << record << record;
//   std::vector<std::string> payloads = ath::read_tfrecords("events.out.tfevents.1.host.2.0");
//   assert(payloads.size() == 2 && payloads[1] == event_bytes);
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ath {

// CRC-32C of `bytes` (the iSCSI polynomial: crc32c("123456789") == 0xe3069283).
uint32_t crc32c_of(std::string_view bytes);
// TensorFlow's mask: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t masked_crc32c(std::string_view bytes);

// `payload` framed as one record.
std::string tfrecord(std::string_view payload);

// Every record's payload, in order, with both CRCs of each checked. A FormatError names the file,
// the record (its index and byte offset) and the fault: a truncated record, a wrong CRC, a length
// larger than the file. An IOError if the file cannot be read.
std::vector<std::string> read_tfrecords(const std::string& path);

}  // namespace ath
