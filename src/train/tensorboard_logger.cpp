// TensorBoardLogger: Event protos written by hand (the few fields TensorBoard reads for scalars)
// in TFRecord framing.
#include "athanor/train/tensorboard_logger.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "athanor/core/error.h"
#include "athanor/io/tfrecord.h"
#include "athanor/train/csv_logger.h"
#include "version_dir.h"

namespace ath::train {
namespace {

// Protocol-buffer wire format (https://protobuf.dev/programming-guides/encoding/): a key is
// (field << 3) | wire type; 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32.
void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
void put_key(std::string& out, int field, int wire) {
  put_varint(out, (static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire));
}
void put_fixed(std::string& out, uint64_t bits, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((bits >> (8 * i)) & 0xff);
}
void put_double(std::string& out, int field, double v) {
  put_key(out, field, 1);
  put_fixed(out, std::bit_cast<uint64_t>(v), 8);
}
void put_float(std::string& out, int field, float v) {
  put_key(out, field, 5);
  put_fixed(out, std::bit_cast<uint32_t>(v), 4);
}
void put_bytes(std::string& out, int field, std::string_view bytes) {
  put_key(out, field, 2);
  put_varint(out, bytes.size());
  out += bytes;
}

// tensorboard/compat/proto/event.proto: Event{wall_time = 1, step = 2, file_version = 3,
// summary = 5}; summary.proto: Summary{value = 1}, Summary.Value{tag = 1, simple_value = 2}.
enum EventField { kWallTime = 1, kStep = 2, kFileVersion = 3, kSummary = 5 };
enum ValueField { kTag = 1, kSimpleValue = 2 };

double now_s() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

}  // namespace

std::string encode_file_version_event(double wall_time) {
  std::string e;
  put_double(e, kWallTime, wall_time);
  put_bytes(e, kFileVersion, "brain.Event:2");
  return e;
}

std::string encode_scalars_event(double wall_time, int64_t step, const Metrics& metrics) {
  std::string summary;
  for (const auto& [tag, value] : metrics) {
    std::string v;
    put_bytes(v, kTag, tag);
    put_float(v, kSimpleValue, static_cast<float>(value));
    put_bytes(summary, 1, v);
  }
  std::string e;
  put_double(e, kWallTime, wall_time);
  put_key(e, kStep, 0);
  put_varint(e, static_cast<uint64_t>(step));  // int64: two's complement, as protobuf's varint
  put_bytes(e, kSummary, summary);
  return e;
}

TensorBoardLogger::TensorBoardLogger(std::string save_dir, TensorBoardLoggerOptions options)
    : save_dir_(std::move(save_dir)), options_(std::move(options)) {
  const detail::VersionDir dir =
      detail::make_version_dir(save_dir_, options_.name, options_.version, "TensorBoardLogger");
  version_ = dir.version;
  log_dir_ = dir.path;
  // torch.utils.tensorboard's name: time, host, process and a per-process counter keep two
  // writers (or two runs in one second) apart.
  static std::atomic<int> counter{0};
  const double wall = now_s();
  events_file_ = fmt::format("{}/events.out.tfevents.{:010d}.{}.{}.{}", log_dir_,
                             static_cast<int64_t>(wall), host_name(), ::getpid(), counter++);
  pending_ = tfrecord(encode_file_version_event(wall));
  save();
}

void TensorBoardLogger::log_hyperparams(const nlohmann::json& hparams) {
  ATH_CHECK(hparams.is_object(), ValueError,
            "TensorBoardLogger: hyperparameters must be a JSON object, got a {}",
            hparams.type_name());
  for (const auto& [k, v] : hparams.items()) hparams_[k] = v;
  detail::write_text_file(log_dir_ + "/hparams.yaml", hparams_to_yaml(hparams_));
}

void TensorBoardLogger::log_metrics(const Metrics& metrics, int64_t step) {
  if (metrics.empty()) return;
  pending_ += tfrecord(encode_scalars_event(now_s(), step, metrics));
}

void TensorBoardLogger::save() {
  if (pending_.empty()) return;
  append(pending_);
  pending_.clear();
}

void TensorBoardLogger::append(const std::string& bytes) {
  const int fd = ::open(events_file_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
  ATH_CHECK(fd >= 0, IOError, "TensorBoardLogger: cannot open {}: {}", events_file_,
            std::strerror(errno));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      ATH_THROW(IOError, "TensorBoardLogger: cannot write {}: {}", events_file_,
                std::strerror(err));
    }
    done += static_cast<std::size_t>(n);
  }
  ATH_CHECK(::close(fd) == 0, IOError, "TensorBoardLogger: cannot write {}: {}", events_file_,
            std::strerror(errno));
}

}  // namespace ath::train
