// peerbench.cc -- a db_bench-compatible measurement harness for embedded
// key-value engines: LevelDB, WiredTiger (btree and LSM) and LMDB.
//
// Vendored from the peer measurements (shared/peers/peerbench.cc, 2026-11-22, unchanged
// below this line except: --num_column_families and --cf_batch are refused with a message, as
// none of its engines has column families; every benchmark ends with strata bench's `Summary`
// line (its cost per operation, measured as strata measures it: see "resources" below); and
// fillseq ignores --duration, as db_bench's does); build it with scripts/build-peerbench.sh.
//
// Written from scratch for this project.  It follows the *behaviour* of
// RocksDB's db_bench (flags, key format, value generator, RNG, per-thread
// stats, histogram buckets and percentile interpolation, output lines) so
// that its numbers can be put next to /usr/bin/db_bench (RocksDB 7.8.3).
//
//   ./peerbench --engine=leveldb --benchmarks=fillseq,readrandom --num=100000
//
// Engines: leveldb | wiredtiger-btree | wiredtiger-lsm | lmdb
// Benchmarks: fillseq fillrandom overwrite readrandom readseq seekrandom
//             updaterandom readwhilewriting compact stats
//
// Flags (db_bench names and meanings; defaults in struct Flags below):
//   --engine --benchmarks --num --reads (per thread) --writes (per thread)
//   --threads --value_size --key_size --cache_size --bloom_bits
//   --compression_type=none|snappy --compression_ratio --sync --disable_wal
//   --use_existing_db --db --histogram --seed --duration (s)
//   --benchmark_write_rate_limit (bytes/s, readwhilewriting writer)
//   --seek_nexts (default 20) --block_size (LevelDB) --write_buffer_size
//   (LevelDB memtable / WT LSM chunk) --open_files (LevelDB)
//   --wt_page_size (WT internal/leaf page max, default 16KB) --lsm_chunk_size
//   --wt_open_config --wt_table_config (appended verbatim) --wt_snappy_ext
//   --lmdb_map_size
// Notes: LevelDB has no WAL switch (--disable_wal is ignored there); LMDB has
// no compaction, compression, cache or bloom settings; LMDB allows one writer
// at a time (concurrent writers queue on its write lock).
#include <dirent.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cctype>
#include <cstdarg>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <leveldb/cache.h>
#include <leveldb/db.h>
#include <leveldb/filter_policy.h>
#include <leveldb/options.h>
#include <leveldb/write_batch.h>
#include <lmdb.h>
#include <wiredtiger.h>

namespace {

// ------------------------------------------------------------------ flags --
struct Flags {
  std::string engine = "leveldb";
  std::string benchmarks = "fillseq,readrandom";
  int64_t num = 1000000;
  int64_t reads = -1;    // per thread; <0 means num
  int64_t writes = -1;   // per thread for fill*/overwrite; <0 means num
  int threads = 1;
  int value_size = 100;
  int key_size = 16;
  int64_t cache_size = 8 << 20;
  int bloom_bits = -1;
  std::string compression_type = "snappy";  // db_bench's default
  double compression_ratio = 0.5;
  bool sync = false;
  bool disable_wal = false;
  bool use_existing_db = false;
  bool histogram = false;
  std::string db = "/tmp/peerbench";
  uint64_t seed = 0;
  int duration = 0;  // seconds; 0 = op-count driven
  int64_t benchmark_write_rate_limit = 0;  // bytes/s, readwhilewriting writer
  int seek_nexts = 20;
  int block_size = 4096;          // LevelDB block_size
  int wt_page_size = 16384;       // WT internal_page_max and leaf_page_max
  int64_t write_buffer_size = 0;  // LevelDB memtable; WT LSM chunk_size (0=default)
  int max_open_files = 1000;      // LevelDB
  int64_t lsm_chunk_size = 64 << 20;  // WT LSM chunk_size
  int64_t lmdb_map_size = 64LL << 30;
  std::string wt_open_config;   // appended to wiredtiger_open config
  std::string wt_table_config;  // appended to WT_SESSION::create config
  std::string wt_snappy_ext = "/usr/lib/x86_64-linux-gnu/libwiredtiger_snappy.so";
} FLAGS;

[[noreturn]] void Die(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void Die(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "peerbench: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

bool ParseBool(const std::string& v) {
  if (v == "1" || v == "true" || v == "yes") return true;
  if (v == "0" || v == "false" || v == "no") return false;
  Die("bad boolean '%s'", v.c_str());
}

void ParseFlags(int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      printf("see the header of peerbench.cc for the flag list\n");
      exit(0);
    }
    if (a.rfind("--", 0) != 0) Die("unexpected argument '%s'", a.c_str());
    size_t eq = a.find('=');
    std::string k = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    std::string v = eq == std::string::npos ? "1" : a.substr(eq + 1);
    auto I = [&]() { return static_cast<int64_t>(std::stoll(v)); };
    if (k == "engine") FLAGS.engine = v;
    else if (k == "benchmarks") FLAGS.benchmarks = v;
    else if (k == "num") FLAGS.num = I();
    else if (k == "reads") FLAGS.reads = I();
    else if (k == "writes") FLAGS.writes = I();
    else if (k == "threads") FLAGS.threads = static_cast<int>(I());
    else if (k == "value_size") FLAGS.value_size = static_cast<int>(I());
    else if (k == "key_size") FLAGS.key_size = static_cast<int>(I());
    else if (k == "cache_size") FLAGS.cache_size = I();
    else if (k == "bloom_bits") FLAGS.bloom_bits = static_cast<int>(I());
    else if (k == "compression_type") FLAGS.compression_type = v;
    else if (k == "compression_ratio") FLAGS.compression_ratio = std::stod(v);
    else if (k == "sync") FLAGS.sync = ParseBool(v);
    else if (k == "disable_wal") FLAGS.disable_wal = ParseBool(v);
    else if (k == "use_existing_db") FLAGS.use_existing_db = ParseBool(v);
    else if (k == "histogram") FLAGS.histogram = ParseBool(v);
    else if (k == "db") FLAGS.db = v;
    else if (k == "seed") FLAGS.seed = static_cast<uint64_t>(std::stoull(v));
    else if (k == "duration") FLAGS.duration = static_cast<int>(I());
    else if (k == "benchmark_write_rate_limit") FLAGS.benchmark_write_rate_limit = I();
    else if (k == "seek_nexts") FLAGS.seek_nexts = static_cast<int>(I());
    else if (k == "block_size") FLAGS.block_size = static_cast<int>(I());
    else if (k == "wt_page_size") FLAGS.wt_page_size = static_cast<int>(I());
    else if (k == "write_buffer_size") FLAGS.write_buffer_size = I();
    else if (k == "open_files") FLAGS.max_open_files = static_cast<int>(I());
    else if (k == "lsm_chunk_size") FLAGS.lsm_chunk_size = I();
    else if (k == "lmdb_map_size") FLAGS.lmdb_map_size = I();
    else if (k == "wt_open_config") FLAGS.wt_open_config = v;
    else if (k == "wt_table_config") FLAGS.wt_table_config = v;
    else if (k == "wt_snappy_ext") FLAGS.wt_snappy_ext = v;
    // db_bench's and strata bench's column family flags: none of these engines has families, so
    // anything but the single default family is refused rather than silently run without.
    else if (k == "num_column_families") {
      if (I() != 1) Die("--num_column_families=%s: LevelDB, WiredTiger and LMDB have no column families here (RocksDB's db_bench and strata bench take it)", v.c_str());
    } else if (k == "cf_batch") {
      if (ParseBool(v)) Die("--cf_batch: LevelDB, WiredTiger and LMDB have no column families here (strata bench takes it)");
    }
    else Die("unknown flag --%s", k.c_str());
  }
  if (FLAGS.compression_type != "none" && FLAGS.compression_type != "snappy")
    Die("--compression_type must be none or snappy");
  if (FLAGS.threads < 1 || FLAGS.num < 1 || FLAGS.key_size < 1 || FLAGS.value_size < 0)
    Die("bad --threads/--num/--key_size/--value_size");
}

// ------------------------------------------------------------------ clock --
inline uint64_t NowMicros() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

struct Slice {
  const char* data = nullptr;
  size_t size = 0;
  Slice() = default;
  Slice(const char* d, size_t n) : data(d), size(n) {}
  explicit Slice(const std::string& s) : data(s.data()), size(s.size()) {}
  int compare(const Slice& o) const {
    int r = memcmp(data, o.data, std::min(size, o.size));
    if (r == 0) r = size < o.size ? -1 : (size > o.size ? 1 : 0);
    return r;
  }
};

// ------------------------------------------------------------- key format --
// Same layout as RocksDB db_bench (keys_per_prefix=0): the integer in
// big-endian order (at most 8 bytes) followed by '0' padding up to key_size.
void EncodeKey(uint64_t v, char* out, int key_size) {
  int fill = std::min(key_size, 8);
  for (int i = 0; i < fill; i++) out[i] = static_cast<char>((v >> ((fill - i - 1) * 8)) & 0xff);
  if (key_size > fill) memset(out + fill, '0', key_size - fill);
}

// ------------------------------------------------------------ value pool --
// Like db_bench's RandomGenerator: >=1 MiB of 100-byte pieces, each made of
// (100 * compression_ratio) random printable bytes repeated to 100 bytes;
// values are consecutive windows of the pool.
class ValueGen {
 public:
  ValueGen() {
    uint32_t state = 301;
    auto next = [&state]() {  // Park-Miller minimal standard generator
      state = static_cast<uint32_t>((static_cast<uint64_t>(state) * 16807) % 2147483647ULL);
      return state;
    };
    size_t target = std::max<size_t>(1048576, static_cast<size_t>(FLAGS.value_size));
    while (pool_.size() < target) {
      int raw = std::max(1, static_cast<int>(100 * FLAGS.compression_ratio));
      std::string piece;
      for (int i = 0; i < raw; i++) piece.push_back(static_cast<char>(' ' + next() % 95));
      std::string frag;
      while (frag.size() < 100) frag.append(piece);
      frag.resize(100);
      pool_.append(frag);
    }
  }
  Slice Generate(size_t len) {
    if (pos_ + len > pool_.size()) pos_ = 0;
    pos_ += len;
    return Slice(pool_.data() + pos_ - len, len);
  }

 private:
  std::string pool_;
  size_t pos_ = 0;
};

// -------------------------------------------------------------- histogram --
// Bucket limits as in RocksDB: 1, 2, then x1.5 each step, trimmed to two
// significant digits; values are whole microseconds; percentiles are linear
// interpolations inside the bucket, clamped to [min, max].
class Histogram {
 public:
  static const std::vector<uint64_t>& Limits() {
    static const std::vector<uint64_t> limits = [] {
      std::vector<uint64_t> l = {1, 2};
      double v = 2;
      while ((v *= 1.5) <= 1e19) {
        uint64_t b = static_cast<uint64_t>(v), scale = 1;
        while (b / 10 > 10) { b /= 10; scale *= 10; }
        l.push_back(b * scale);
      }
      return l;
    }();
    return limits;
  }
  Histogram() : buckets_(Limits().size(), 0) {}
  void Add(uint64_t v) {
    const auto& l = Limits();
    size_t b = std::lower_bound(l.begin(), l.end(), v) - l.begin();
    if (b >= buckets_.size()) b = buckets_.size() - 1;
    buckets_[b]++;
    min_ = std::min(min_, v);
    max_ = std::max(max_, v);
    num_++;
    sum_ += static_cast<double>(v);
    sumsq_ += static_cast<double>(v) * static_cast<double>(v);
  }
  void Merge(const Histogram& o) {
    for (size_t i = 0; i < buckets_.size(); i++) buckets_[i] += o.buckets_[i];
    min_ = std::min(min_, o.min_);
    max_ = std::max(max_, o.max_);
    num_ += o.num_;
    sum_ += o.sum_;
    sumsq_ += o.sumsq_;
  }
  uint64_t count() const { return num_; }
  uint64_t max() const { return max_; }
  double Percentile(double p) const {
    const auto& l = Limits();
    double threshold = static_cast<double>(num_) * (p / 100.0);
    uint64_t cum = 0;
    for (size_t b = 0; b < buckets_.size(); b++) {
      cum += buckets_[b];
      if (static_cast<double>(cum) >= threshold) {
        double left = b == 0 ? 0 : static_cast<double>(l[b - 1]);
        double right = static_cast<double>(l[b]);
        uint64_t left_sum = cum - buckets_[b];
        double pos = buckets_[b] ? (threshold - left_sum) / buckets_[b] : 0;
        double r = left + (right - left) * pos;
        r = std::max(r, static_cast<double>(min_));
        return std::min(r, static_cast<double>(max_));
      }
    }
    return static_cast<double>(max_);
  }
  std::string ToString() const {
    char buf[256];
    std::string r;
    double avg = num_ ? sum_ / num_ : 0;
    double var = num_ ? (sumsq_ * num_ - sum_ * sum_) / (static_cast<double>(num_) * num_) : 0;
    snprintf(buf, sizeof(buf), "Count: %" PRIu64 " Average: %.4f  StdDev: %.2f\n", num_, avg,
             std::sqrt(std::max(0.0, var)));
    r += buf;
    snprintf(buf, sizeof(buf), "Min: %" PRIu64 "  Median: %.4f  Max: %" PRIu64 "\n",
             num_ ? min_ : 0, Percentile(50), max_);
    r += buf;
    snprintf(buf, sizeof(buf),
             "Percentiles: P50: %.2f P75: %.2f P99: %.2f P99.9: %.2f P99.99: %.2f\n",
             Percentile(50), Percentile(75), Percentile(99), Percentile(99.9),
             Percentile(99.99));
    r += buf;
    r += "------------------------------------------------------\n";
    const auto& l = Limits();
    uint64_t cum = 0;
    for (size_t b = 0; b < buckets_.size(); b++) {
      if (!buckets_[b]) continue;
      cum += buckets_[b];
      double pct = 100.0 * buckets_[b] / num_;
      snprintf(buf, sizeof(buf), "%c %7" PRIu64 ", %7" PRIu64 " ] %8" PRIu64 " %7.3f%% %7.3f%% ",
               b == 0 ? '[' : '(', b == 0 ? 0 : l[b - 1], l[b], buckets_[b], pct,
               100.0 * cum / num_);
      r += buf;
      r.append(static_cast<size_t>(pct / 5 + 0.5), '#');
      r += "\n";
    }
    return r;
  }

 private:
  std::vector<uint64_t> buckets_;
  uint64_t min_ = UINT64_MAX, max_ = 0, num_ = 0;
  double sum_ = 0, sumsq_ = 0;
};

// ------------------------------------------------------------------ stats --
class Stats {
 public:
  void Start() {
    start_ = last_ = NowMicros();
    finish_ = start_;
    done_ = bytes_ = 0;
    seconds_ = 0;
  }
  void Stop() {
    finish_ = NowMicros();
    seconds_ = static_cast<double>(finish_ - start_) * 1e-6;
  }
  inline void FinishedOps(int64_t n) {
    if (FLAGS.histogram) {
      uint64_t now = NowMicros();
      hist_.Add(now - last_);
      last_ = now;
    }
    done_ += n;
  }
  void AddBytes(int64_t n) { bytes_ += n; }
  // The operation count the result line prints (at least 1), and the latencies.
  int64_t Done() const { return done_ < 1 ? 1 : done_; }
  const Histogram& Hist() const { return hist_; }
  void AddMessage(const std::string& m) { message_ = m; }
  void Merge(const Stats& o) {
    hist_.Merge(o.hist_);
    done_ += o.done_;
    bytes_ += o.bytes_;
    seconds_ += o.seconds_;
    start_ = std::min(start_, o.start_);
    finish_ = std::max(finish_, o.finish_);
    if (message_.empty()) message_ = o.message_;
  }
  // Same arithmetic as db_bench: micros/op uses the per-thread elapsed times
  // summed over threads; ops/sec and MB/s use wall-clock elapsed time.
  void Report(const std::string& name, const char* hist_title) {
    int64_t done = done_ < 1 ? 1 : done_;
    double elapsed = static_cast<double>(finish_ - start_) * 1e-6;
    if (elapsed <= 0) elapsed = 1e-6;
    std::string extra;
    char buf[200];
    if (bytes_ > 0) {
      snprintf(buf, sizeof(buf), "%6.1f MB/s", (bytes_ / 1048576.0) / elapsed);
      extra = buf;
    }
    if (!message_.empty()) {
      if (!extra.empty()) extra += " ";
      extra += message_;
    }
    printf("%-12s : %11.3f micros/op %ld ops/sec %.3f seconds %" PRId64 " operations;%s%s\n",
           name.c_str(), seconds_ * 1e6 / done, static_cast<long>(done / elapsed), elapsed,
           done, extra.empty() ? "" : " ", extra.c_str());
    if (FLAGS.histogram && hist_.count() > 0)
      printf("Microseconds per %s:\n%s\n", hist_title, hist_.ToString().c_str());
    fflush(stdout);
  }

 private:
  Histogram hist_;
  uint64_t start_ = 0, finish_ = 0, last_ = 0;
  int64_t done_ = 0, bytes_ = 0;
  double seconds_ = 0;
  std::string message_;
};

// Op-count or time bound, like db_bench's Duration.
// `timed` false: the op count alone (db_bench's fillseq ignores --duration: it writes its keys).
class Duration {
 public:
  explicit Duration(int64_t max_ops, bool timed = true)
      : max_ops_(max_ops), timed_(timed), start_(NowMicros()) {}
  bool Done(int64_t inc = 1) {
    ops_ += inc;
    if (timed_ && FLAGS.duration > 0) {
      if (ops_ / 1000 != (ops_ - inc) / 1000)
        return (NowMicros() - start_) / 1000000 >= static_cast<uint64_t>(FLAGS.duration);
      return false;
    }
    return ops_ > max_ops_;
  }

 private:
  int64_t max_ops_, ops_ = 0;
  bool timed_;
  uint64_t start_;
};

// -------------------------------------------------------------- resources --
// What a benchmark cost the machine, measured by this process about itself exactly as strata
// bench's crates/strata-cli/src/bench/resources.rs measures it, so the `Summary NAME:` line
// (report.rs's format) means the same thing for both and `strata bench compare` reads both:
//  - bytes read from and written to storage: read_bytes and write_bytes of /proc/self/io
//    (a buffered write is charged when its page is dirtied, so later writeback still counts)
//  - disk read requests: field 1 of every /sys/block/*/stat (loop, ram and zram devices left
//    out): the whole machine's, so meaningful only when nothing else runs
//  - CPU: utime + stime of /proc/self/stat (every thread, exited ones included), USER_HZ ticks
//  - context switches: voluntary + nonvoluntary of each benchmark thread, counted on itself
//    (/proc/thread-self/status) around its run, plus the growth of every thread alive at the
//    end (/proc/self/task/*/status: the main thread and the engine's own threads); a thread
//    that is not a benchmark thread and exits during the benchmark is missed, as in strata
//  - peak RSS: VmHWM of /proc/self/status; database size: du (allocated blocks) of --db
namespace res {

bool ReadFile(const std::string& path, std::string* out) {
  FILE* f = fopen(path.c_str(), "r");
  if (!f) return false;
  out->clear();
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out->append(buf, n);
  fclose(f);
  return true;
}

// The number after `name` on the first line that starts with it (`write_bytes: 4096`).
std::optional<uint64_t> Field(const std::string& text, const char* name) {
  size_t len = strlen(name), pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    if (text.compare(pos, len, name) == 0) {
      const char* p = text.c_str() + pos + len;
      while (*p == ' ' || *p == '\t') p++;
      if (*p < '0' || *p > '9') return std::nullopt;
      return strtoull(p, nullptr, 10);
    }
    pos = eol + 1;
  }
  return std::nullopt;
}

std::optional<uint64_t> Switches(const std::string& status) {
  auto v = Field(status, "voluntary_ctxt_switches:");
  auto n = Field(status, "nonvoluntary_ctxt_switches:");
  if (!v || !n) return std::nullopt;
  return *v + *n;
}

// The calling thread's context switches so far.
std::optional<uint64_t> OwnSwitches() {
  std::string t;
  if (!ReadFile("/proc/thread-self/status", &t)) return std::nullopt;
  return Switches(t);
}

// Context switches so far of every live thread, by thread id.
std::map<uint64_t, uint64_t> ThreadSwitches() {
  std::map<uint64_t, uint64_t> out;
  DIR* d = opendir("/proc/self/task");
  if (!d) return out;
  while (struct dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::string t;
    if (!ReadFile(std::string("/proc/self/task/") + e->d_name + "/status", &t)) continue;
    if (auto n = Switches(t)) out[strtoull(e->d_name, nullptr, 10)] = *n;
  }
  closedir(d);
  return out;
}

// utime + stime of the whole process in clock ticks (fields 14 and 15 of /proc/self/stat).
std::optional<uint64_t> CpuTicks() {
  std::string t;
  if (!ReadFile("/proc/self/stat", &t)) return std::nullopt;
  size_t close = t.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return std::nullopt;
  std::vector<std::string> fields;
  size_t pos = close + 1;
  while (pos < t.size()) {
    while (pos < t.size() && isspace(static_cast<unsigned char>(t[pos]))) pos++;
    size_t end = pos;
    while (end < t.size() && !isspace(static_cast<unsigned char>(t[end]))) end++;
    if (end > pos) fields.push_back(t.substr(pos, end - pos));
    pos = end;
  }
  if (fields.size() < 13) return std::nullopt;  // fields[k - 3] is field k
  return strtoull(fields[11].c_str(), nullptr, 10) + strtoull(fields[12].c_str(), nullptr, 10);
}

std::optional<std::pair<uint64_t, uint64_t>> IoBytes() {
  std::string t;
  if (!ReadFile("/proc/self/io", &t)) return std::nullopt;
  auto r = Field(t, "read_bytes:");
  auto w = Field(t, "write_bytes:");
  if (!r || !w) return std::nullopt;
  return std::make_pair(*r, *w);
}

// Read requests completed by every disk of the machine.
std::optional<uint64_t> DiskReads() {
  DIR* d = opendir("/sys/block");
  if (!d) return std::nullopt;
  uint64_t total = 0;
  bool ok = true;
  while (struct dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == ".." || name.rfind("loop", 0) == 0 || name.rfind("ram", 0) == 0 ||
        name.rfind("zram", 0) == 0)
      continue;
    std::string t;
    if (!ReadFile("/sys/block/" + name + "/stat", &t)) { ok = false; break; }
    const char* p = t.c_str();
    while (*p == ' ') p++;
    if (*p < '0' || *p > '9') { ok = false; break; }
    total += strtoull(p, nullptr, 10);
  }
  closedir(d);
  if (!ok) return std::nullopt;
  return total;
}

std::optional<uint64_t> PeakRss() {
  std::string t;
  if (!ReadFile("/proc/self/status", &t)) return std::nullopt;
  auto kb = Field(t, "VmHWM:");
  if (!kb) return std::nullopt;
  return *kb * 1024;
}

// Disk usage of a tree in bytes, as du counts it (allocated blocks).
uint64_t DiskUsage(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return 0;
  uint64_t own = static_cast<uint64_t>(st.st_blocks) * 512;
  if (!S_ISDIR(st.st_mode)) return own;
  if (DIR* d = opendir(path.c_str())) {
    while (struct dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") own += DiskUsage(path + "/" + n);
    }
    closedir(d);
  }
  return own;
}

// The process's figures at one moment.
struct Sample {
  std::optional<uint64_t> cpu_ticks = CpuTicks();
  std::optional<std::pair<uint64_t, uint64_t>> io = IoBytes();
  std::optional<uint64_t> disk_reads = DiskReads();
  std::map<uint64_t, uint64_t> threads = ThreadSwitches();
};

std::string Opt(const std::optional<double>& v, const char* fmt) {
  if (!v) return "n/a";
  char b[64];
  snprintf(b, sizeof b, fmt, *v);
  return b;
}

// report.rs's Summary line for a benchmark of `ops` operations that ran from `before` to now;
// `worker_switches` is what the benchmark threads counted on themselves (nullopt if any could
// not). Latencies are n/a without --histogram (peerbench records none then).
std::string SummaryLine(const std::string& name, int64_t ops, const Histogram& h,
                        const Sample& before, std::optional<uint64_t> worker_switches) {
  Sample now;
  auto sub = [](uint64_t a, uint64_t b) { return a > b ? a - b : 0; };
  auto per = [&](double x) { return x / static_cast<double>(ops < 1 ? 1 : ops); };
  std::optional<double> w, r, reads, cpu, cs;
  if (now.io && before.io) {
    w = per(static_cast<double>(sub(now.io->second, before.io->second)));
    r = per(static_cast<double>(sub(now.io->first, before.io->first)));
  }
  if (now.disk_reads && before.disk_reads)
    reads = per(static_cast<double>(sub(*now.disk_reads, *before.disk_reads)));
  if (now.cpu_ticks && before.cpu_ticks)
    cpu = per(static_cast<double>(sub(*now.cpu_ticks, *before.cpu_ticks)) / 100.0 * 1e6);
  if (worker_switches) {
    uint64_t live = 0;
    for (const auto& [tid, n] : now.threads) {
      auto it = before.threads.find(tid);
      live += sub(n, it == before.threads.end() ? 0 : it->second);
    }
    cs = per(static_cast<double>(*worker_switches + live));
  }
  std::optional<double> rss;
  if (auto b = PeakRss()) rss = *b / 1048576.0;
  bool lat = h.count() > 0;
  char b[1024];
  snprintf(b, sizeof b,
           "Summary %s: db_size %.1f MB, disk write %s bytes/op, disk read %s bytes/op, "
           "disk reads/op %s, cpu %s us/op, cs/op %s, peak RSS %s, P99 %s P99.99 %s Max %s us\n",
           name.c_str(), DiskUsage(FLAGS.db) / 1048576.0, Opt(w, "%.1f").c_str(),
           Opt(r, "%.1f").c_str(), Opt(reads, "%.4f").c_str(), Opt(cpu, "%.2f").c_str(),
           Opt(cs, "%.3f").c_str(), rss ? Opt(rss, "%.1f MB").c_str() : "n/a",
           lat ? Opt(h.Percentile(99), "%.2f").c_str() : "n/a",
           lat ? Opt(h.Percentile(99.99), "%.2f").c_str() : "n/a",
           lat ? std::to_string(h.max()).c_str() : "n/a");
  return b;
}

}  // namespace res

// ---------------------------------------------------------------- engines --
struct ThreadCtx {
  virtual ~ThreadCtx() = default;
};

class Iter {
 public:
  virtual ~Iter() = default;
  virtual void SeekToFirst() = 0;
  virtual void Seek(const Slice& k) = 0;
  virtual bool Valid() const = 0;
  virtual void Next() = 0;
  virtual Slice key() = 0;
  virtual Slice value() = 0;
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string Version() const = 0;
  virtual std::string Config() const = 0;
  virtual void Open(bool fresh) = 0;
  virtual void Close() = 0;
  virtual std::unique_ptr<ThreadCtx> NewCtx() = 0;
  virtual void Put(ThreadCtx* c, const Slice& k, const Slice& v) = 0;
  virtual bool Get(ThreadCtx* c, const Slice& k, std::string* v) = 0;
  virtual std::unique_ptr<Iter> NewIter(ThreadCtx* c) = 0;
  virtual std::string Compact(ThreadCtx* c) = 0;  // returns a note, or ""
  virtual std::string Stats() = 0;
};

void RemoveTree(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    if (DIR* d = opendir(path.c_str())) {
      while (struct dirent* e = readdir(d)) {
        std::string n = e->d_name;
        if (n != "." && n != "..") RemoveTree(path + "/" + n);
      }
      closedir(d);
    }
    rmdir(path.c_str());
  } else {
    unlink(path.c_str());
  }
}

void MakeDir(const std::string& path) {
  if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) Die("mkdir %s failed", path.c_str());
}

// ---- LevelDB
class LevelDBEngine : public Engine {
 public:
  ~LevelDBEngine() override { Close(); }
  std::string Version() const override {
    return "LevelDB " + std::to_string(leveldb::kMajorVersion) + "." +
           std::to_string(leveldb::kMinorVersion);
  }
  std::string Config() const override {
    char b[512];
    snprintf(b, sizeof(b),
             "block_cache=%" PRId64 " bloom_bits=%d compression=%s block_size=%d "
             "write_buffer_size=%s max_open_files=%d sync=%d (LevelDB has no WAL switch: "
             "--disable_wal ignored, log always written)",
             FLAGS.cache_size, FLAGS.bloom_bits, FLAGS.compression_type.c_str(), FLAGS.block_size,
             FLAGS.write_buffer_size > 0 ? std::to_string(FLAGS.write_buffer_size).c_str()
                                         : "default(4MB)",
             FLAGS.max_open_files, FLAGS.sync ? 1 : 0);
    return b;
  }
  void Open(bool fresh) override {
    Close();
    opt_ = leveldb::Options();
    cache_.reset(leveldb::NewLRUCache(static_cast<size_t>(FLAGS.cache_size)));
    opt_.block_cache = cache_.get();
    if (FLAGS.bloom_bits >= 0) {
      filter_.reset(leveldb::NewBloomFilterPolicy(FLAGS.bloom_bits));
      opt_.filter_policy = filter_.get();
    }
    opt_.compression = FLAGS.compression_type == "snappy" ? leveldb::kSnappyCompression
                                                          : leveldb::kNoCompression;
    opt_.block_size = static_cast<size_t>(FLAGS.block_size);
    if (FLAGS.write_buffer_size > 0) opt_.write_buffer_size = FLAGS.write_buffer_size;
    opt_.max_open_files = FLAGS.max_open_files;
    opt_.create_if_missing = true;
    if (fresh) leveldb::DestroyDB(FLAGS.db, opt_);
    leveldb::Status s = leveldb::DB::Open(opt_, FLAGS.db, &db_);
    if (!s.ok()) Die("leveldb open: %s", s.ToString().c_str());
    wo_.sync = FLAGS.sync;
  }
  void Close() override {
    delete db_;
    db_ = nullptr;
  }
  std::unique_ptr<ThreadCtx> NewCtx() override { return std::make_unique<ThreadCtx>(); }
  void Put(ThreadCtx*, const Slice& k, const Slice& v) override {
    leveldb::Status s = db_->Put(wo_, leveldb::Slice(k.data, k.size), leveldb::Slice(v.data, v.size));
    if (!s.ok()) Die("leveldb put: %s", s.ToString().c_str());
  }
  bool Get(ThreadCtx*, const Slice& k, std::string* v) override {
    leveldb::Status s = db_->Get(leveldb::ReadOptions(), leveldb::Slice(k.data, k.size), v);
    if (s.ok()) return true;
    if (s.IsNotFound()) return false;
    Die("leveldb get: %s", s.ToString().c_str());
  }
  class LIter : public Iter {
   public:
    explicit LIter(leveldb::Iterator* it) : it_(it) {}
    void SeekToFirst() override { it_->SeekToFirst(); }
    void Seek(const Slice& k) override { it_->Seek(leveldb::Slice(k.data, k.size)); }
    bool Valid() const override { return it_->Valid(); }
    void Next() override { it_->Next(); }
    Slice key() override { auto s = it_->key(); return Slice(s.data(), s.size()); }
    Slice value() override { auto s = it_->value(); return Slice(s.data(), s.size()); }
   private:
    std::unique_ptr<leveldb::Iterator> it_;
  };
  std::unique_ptr<Iter> NewIter(ThreadCtx*) override {
    return std::make_unique<LIter>(db_->NewIterator(leveldb::ReadOptions()));
  }
  std::string Compact(ThreadCtx*) override {
    db_->CompactRange(nullptr, nullptr);
    return "";
  }
  std::string Stats() override {
    std::string s, m;
    db_->GetProperty("leveldb.stats", &s);
    db_->GetProperty("leveldb.approximate-memory-usage", &m);
    return s + "approximate-memory-usage: " + m + "\n";
  }

 private:
  leveldb::DB* db_ = nullptr;
  leveldb::Options opt_;
  leveldb::WriteOptions wo_;
  std::unique_ptr<leveldb::Cache> cache_;
  std::unique_ptr<const leveldb::FilterPolicy> filter_;
};

// ---- WiredTiger (btree or LSM)
#define WT_CHECK(call, what)                                                   \
  do {                                                                         \
    int wt_rc_ = (call);                                                       \
    if (wt_rc_ != 0) Die("wiredtiger %s: %s", what, wiredtiger_strerror(wt_rc_)); \
  } while (0)

class WTEngine : public Engine {
 public:
  explicit WTEngine(bool lsm) : lsm_(lsm) {}
  ~WTEngine() override { Close(); }
  std::string Version() const override { return WIREDTIGER_VERSION_STRING; }
  std::string Config() const override { return "wiredtiger_open: " + OpenConfig() + " | table: " + TableConfig(); }
  std::string OpenConfig() const {
    char b[512];
    snprintf(b, sizeof(b), "create,cache_size=%" PRId64 ",session_max=%d", FLAGS.cache_size,
             FLAGS.threads + 64);
    std::string c = b;
    if (FLAGS.compression_type == "snappy") c += ",extensions=[\"" + FLAGS.wt_snappy_ext + "\"]";
    c += FLAGS.disable_wal ? ",log=(enabled=false)" : ",log=(enabled=true)";
    if (!FLAGS.disable_wal)
      c += FLAGS.sync ? ",transaction_sync=(enabled=true,method=fsync)"
                      : ",transaction_sync=(enabled=false)";
    if (stats_) c += ",statistics=(fast)";
    if (!FLAGS.wt_open_config.empty()) c += "," + FLAGS.wt_open_config;
    return c;
  }
  std::string TableConfig() const {
    char b[512];
    snprintf(b, sizeof(b), "key_format=u,value_format=u,internal_page_max=%d,leaf_page_max=%d",
             FLAGS.wt_page_size, FLAGS.wt_page_size);
    std::string c = b;
    if (FLAGS.compression_type == "snappy") c += ",block_compressor=snappy";
    if (lsm_) {
      int64_t chunk = FLAGS.write_buffer_size > 0 ? FLAGS.write_buffer_size : FLAGS.lsm_chunk_size;
      snprintf(b, sizeof(b), ",type=lsm,lsm=(chunk_size=%" PRId64, chunk);
      c += b;
      if (FLAGS.bloom_bits > 0)
        c += ",bloom=true,bloom_oldest=true,bloom_bit_count=" + std::to_string(FLAGS.bloom_bits);
      else
        c += ",bloom=false";
      c += ")";
    }
    if (!FLAGS.wt_table_config.empty()) c += "," + FLAGS.wt_table_config;
    return c;
  }
  void EnableStats() { stats_ = true; }
  void Open(bool fresh) override {
    Close();
    if (fresh) RemoveTree(FLAGS.db);
    MakeDir(FLAGS.db);
    WT_CHECK(wiredtiger_open(FLAGS.db.c_str(), nullptr, OpenConfig().c_str(), &conn_), "open");
    WT_CHECK(conn_->open_session(conn_, nullptr, nullptr, &admin_), "open_session");
    WT_CHECK(admin_->create(admin_, "table:bench", TableConfig().c_str()), "create");
  }
  void Close() override {
    if (conn_) {
      WT_CHECK(conn_->close(conn_, nullptr), "close");
      conn_ = nullptr;
      admin_ = nullptr;
    }
  }
  struct Ctx : ThreadCtx {
    WT_SESSION* s = nullptr;
    WT_CURSOR* c = nullptr;
    ~Ctx() override {
      if (s) s->close(s, nullptr);
    }
  };
  std::unique_ptr<ThreadCtx> NewCtx() override {
    auto x = std::make_unique<Ctx>();
    WT_CHECK(conn_->open_session(conn_, nullptr, nullptr, &x->s), "open_session");
    WT_CHECK(x->s->open_cursor(x->s, "table:bench", nullptr, nullptr, &x->c), "open_cursor");
    return x;
  }
  void Put(ThreadCtx* tc, const Slice& k, const Slice& v) override {
    WT_CURSOR* c = static_cast<Ctx*>(tc)->c;
    WT_ITEM ki, vi;
    memset(&ki, 0, sizeof ki);
    memset(&vi, 0, sizeof vi);
    ki.data = k.data; ki.size = k.size;
    vi.data = v.data; vi.size = v.size;
    for (;;) {
      c->set_key(c, &ki);
      c->set_value(c, &vi);
      int rc = c->insert(c);
      if (rc == 0) return;
      if (rc != WT_ROLLBACK) Die("wiredtiger insert: %s", wiredtiger_strerror(rc));
      c->reset(c);  // write conflict between threads: retry
    }
  }
  bool Get(ThreadCtx* tc, const Slice& k, std::string* v) override {
    WT_CURSOR* c = static_cast<Ctx*>(tc)->c;
    WT_ITEM ki, vi;
    memset(&ki, 0, sizeof ki);
    ki.data = k.data; ki.size = k.size;
    c->set_key(c, &ki);
    int rc = c->search(c);
    if (rc == WT_NOTFOUND) return false;
    if (rc != 0) Die("wiredtiger search: %s", wiredtiger_strerror(rc));
    WT_CHECK(c->get_value(c, &vi), "get_value");
    v->assign(static_cast<const char*>(vi.data), vi.size);
    c->reset(c);  // release the page pin
    return true;
  }
  class WIter : public Iter {
   public:
    explicit WIter(WT_CURSOR* c) : c_(c) { c_->reset(c_); }
    ~WIter() override { c_->reset(c_); }
    void SeekToFirst() override {
      c_->reset(c_);
      Settle(c_->next(c_));
    }
    void Seek(const Slice& k) override {
      WT_ITEM ki;
      memset(&ki, 0, sizeof ki);
      ki.data = k.data; ki.size = k.size;
      c_->set_key(c_, &ki);
      int exact = 0;
      int rc = c_->search_near(c_, &exact);
      if (rc == 0 && exact < 0) rc = c_->next(c_);
      Settle(rc);
    }
    bool Valid() const override { return valid_; }
    void Next() override { Settle(c_->next(c_)); }
    Slice key() override { return Slice(static_cast<const char*>(k_.data), k_.size); }
    Slice value() override { return Slice(static_cast<const char*>(v_.data), v_.size); }
   private:
    void Settle(int rc) {
      if (rc == WT_NOTFOUND) { valid_ = false; return; }
      if (rc != 0) Die("wiredtiger cursor: %s", wiredtiger_strerror(rc));
      WT_CHECK(c_->get_key(c_, &k_), "get_key");
      WT_CHECK(c_->get_value(c_, &v_), "get_value");
      valid_ = true;
    }
    WT_CURSOR* c_;
    WT_ITEM k_{}, v_{};
    bool valid_ = false;
  };
  std::unique_ptr<Iter> NewIter(ThreadCtx* tc) override {
    return std::make_unique<WIter>(static_cast<Ctx*>(tc)->c);
  }
  std::string Compact(ThreadCtx* tc) override {
    WT_SESSION* s = static_cast<Ctx*>(tc)->s;
    WT_CHECK(s->compact(s, "table:bench", nullptr), "compact");
    return "";
  }
  std::string Stats() override {
    if (!stats_) return "(statistics not enabled)\n";
    WT_CURSOR* sc = nullptr;
    WT_CHECK(admin_->open_cursor(admin_, "statistics:", nullptr, nullptr, &sc), "stat cursor");
    static const char* keys[] = {"cache: bytes currently in the cache",
                                 "cache: tracked dirty bytes in the cache",
                                 "cache: bytes read into cache",
                                 "cache: bytes written from cache",
                                 "cache: pages evicted by application threads",
                                 "block-manager: bytes read",
                                 "block-manager: bytes written",
                                 "LSM: ",
                                 "log: log bytes written",
                                 "log: log sync operations"};
    std::string out;
    const char* desc;
    const char* pval;
    int64_t val;
    while (sc->next(sc) == 0) {
      if (sc->get_value(sc, &desc, &pval, &val) != 0) continue;
      for (const char* k : keys)
        if (strstr(desc, k) == desc) {
          out += std::string(desc) + ": " + pval + "\n";
          break;
        }
    }
    sc->close(sc);
    return out;
  }

 private:
  bool lsm_;
  bool stats_ = false;
  WT_CONNECTION* conn_ = nullptr;
  WT_SESSION* admin_ = nullptr;
};

// ---- LMDB
#define MDB_CHECK(call, what)                                                 \
  do {                                                                        \
    int mdb_rc_ = (call);                                                     \
    if (mdb_rc_ != 0) Die("lmdb %s: %s", what, mdb_strerror(mdb_rc_));       \
  } while (0)

class LMDBEngine : public Engine {
 public:
  ~LMDBEngine() override { Close(); }
  std::string Version() const override { return MDB_VERSION_STRING; }
  std::string Config() const override {
    char b[400];
    snprintf(b, sizeof(b),
             "mapsize=%" PRId64 " flags=MDB_NORDAHEAD|MDB_NOTLS%s maxreaders=%d "
             "(single writer; one txn per write; no compression/cache/bloom/WAL knobs)",
             FLAGS.lmdb_map_size, FLAGS.sync ? "" : "|MDB_NOSYNC", MaxReaders());
    return b;
  }
  static int MaxReaders() { return std::max(126, FLAGS.threads * 2 + 16); }
  void Open(bool fresh) override {
    Close();
    if (fresh) RemoveTree(FLAGS.db);
    MakeDir(FLAGS.db);
    MDB_CHECK(mdb_env_create(&env_), "env_create");
    MDB_CHECK(mdb_env_set_mapsize(env_, static_cast<size_t>(FLAGS.lmdb_map_size)), "set_mapsize");
    MDB_CHECK(mdb_env_set_maxreaders(env_, MaxReaders()), "set_maxreaders");
    unsigned flags = MDB_NORDAHEAD | MDB_NOTLS | (FLAGS.sync ? 0 : MDB_NOSYNC);
    MDB_CHECK(mdb_env_open(env_, FLAGS.db.c_str(), flags, 0664), "env_open");
    MDB_txn* txn;
    MDB_CHECK(mdb_txn_begin(env_, nullptr, 0, &txn), "txn_begin");
    MDB_CHECK(mdb_dbi_open(txn, nullptr, 0, &dbi_), "dbi_open");
    MDB_CHECK(mdb_txn_commit(txn), "txn_commit");
  }
  void Close() override {
    if (env_) {
      mdb_env_sync(env_, 1);  // make the data durable (timed as part of close)
      mdb_env_close(env_);
      env_ = nullptr;
    }
  }
  struct Ctx : ThreadCtx {
    MDB_txn* rtxn = nullptr;
    ~Ctx() override {
      if (rtxn) mdb_txn_abort(rtxn);
    }
  };
  std::unique_ptr<ThreadCtx> NewCtx() override {
    auto x = std::make_unique<Ctx>();
    MDB_CHECK(mdb_txn_begin(env_, nullptr, MDB_RDONLY, &x->rtxn), "txn_begin(rdonly)");
    mdb_txn_reset(x->rtxn);
    return x;
  }
  void Put(ThreadCtx*, const Slice& k, const Slice& v) override {
    MDB_txn* txn;
    MDB_val kv{k.size, const_cast<char*>(k.data)}, vv{v.size, const_cast<char*>(v.data)};
    MDB_CHECK(mdb_txn_begin(env_, nullptr, 0, &txn), "txn_begin");
    int rc = mdb_put(txn, dbi_, &kv, &vv, 0);
    if (rc != 0) {
      mdb_txn_abort(txn);
      Die("lmdb put: %s", mdb_strerror(rc));
    }
    MDB_CHECK(mdb_txn_commit(txn), "txn_commit");
  }
  bool Get(ThreadCtx* tc, const Slice& k, std::string* v) override {
    MDB_txn* t = static_cast<Ctx*>(tc)->rtxn;
    MDB_CHECK(mdb_txn_renew(t), "txn_renew");
    MDB_val kv{k.size, const_cast<char*>(k.data)}, vv;
    int rc = mdb_get(t, dbi_, &kv, &vv);
    bool found = rc == 0;
    if (found) v->assign(static_cast<const char*>(vv.mv_data), vv.mv_size);
    mdb_txn_reset(t);
    if (rc != 0 && rc != MDB_NOTFOUND) Die("lmdb get: %s", mdb_strerror(rc));
    return found;
  }
  class MIter : public Iter {
   public:
    MIter(MDB_txn* t, MDB_dbi dbi) : t_(t) {
      MDB_CHECK(mdb_txn_renew(t_), "txn_renew");
      MDB_CHECK(mdb_cursor_open(t_, dbi, &c_), "cursor_open");
    }
    ~MIter() override {
      mdb_cursor_close(c_);
      mdb_txn_reset(t_);
    }
    void SeekToFirst() override { Settle(mdb_cursor_get(c_, &k_, &v_, MDB_FIRST)); }
    void Seek(const Slice& k) override {
      k_.mv_size = k.size;
      k_.mv_data = const_cast<char*>(k.data);
      Settle(mdb_cursor_get(c_, &k_, &v_, MDB_SET_RANGE));
    }
    bool Valid() const override { return valid_; }
    void Next() override { Settle(mdb_cursor_get(c_, &k_, &v_, MDB_NEXT)); }
    Slice key() override { return Slice(static_cast<const char*>(k_.mv_data), k_.mv_size); }
    Slice value() override { return Slice(static_cast<const char*>(v_.mv_data), v_.mv_size); }
   private:
    void Settle(int rc) {
      if (rc != 0 && rc != MDB_NOTFOUND) Die("lmdb cursor: %s", mdb_strerror(rc));
      valid_ = rc == 0;
    }
    MDB_txn* t_;
    MDB_cursor* c_ = nullptr;
    MDB_val k_{}, v_{};
    bool valid_ = false;
  };
  std::unique_ptr<Iter> NewIter(ThreadCtx* tc) override {
    return std::make_unique<MIter>(static_cast<Ctx*>(tc)->rtxn, dbi_);
  }
  std::string Compact(ThreadCtx*) override {
    return "(LMDB has no in-place compaction: no-op)";
  }
  std::string Stats() override {
    MDB_stat st;
    MDB_envinfo info;
    mdb_env_stat(env_, &st);
    mdb_env_info(env_, &info);
    char b[512];
    snprintf(b, sizeof(b),
             "psize=%u depth=%u branch_pages=%zu leaf_pages=%zu overflow_pages=%zu entries=%zu "
             "last_pgno=%zu (%.1f MB used) mapsize=%zu\n",
             st.ms_psize, st.ms_depth, st.ms_branch_pages, st.ms_leaf_pages,
             st.ms_overflow_pages, st.ms_entries, info.me_last_pgno,
             (info.me_last_pgno + 1) * static_cast<double>(st.ms_psize) / 1048576.0,
             info.me_mapsize);
    return b;
  }

 private:
  MDB_env* env_ = nullptr;
  MDB_dbi dbi_ = 0;
};

// -------------------------------------------------------------- benchmark --
struct SharedState {
  std::mutex mu;
  std::condition_variable cv;
  int total = 0, initialized = 0, done = 0;
  bool start = false;
};

struct ThreadState {
  int tid;
  std::mt19937_64 rand;  // same generator and seeding scheme as db_bench's Random64
  Stats stats;
  SharedState* shared = nullptr;
  ThreadCtx* ctx = nullptr;
  bool exclude = false;     // readwhilewriting writer: not merged into the report
  int64_t found = 0, ops = 0;  // for the "(found of ops found)" messages, summed over threads
  std::optional<uint64_t> switches;  // its own context switches while it ran
  ThreadState(int t, uint64_t seed) : tid(t), rand(seed) {}
};

class Benchmark {
 public:
  explicit Benchmark(std::unique_ptr<Engine> e) : engine_(std::move(e)) {
    reads_ = FLAGS.reads < 0 ? FLAGS.num : FLAGS.reads;
    writes_ = FLAGS.writes < 0 ? FLAGS.num : FLAGS.writes;
    readwrites_ = (FLAGS.reads < 0 && FLAGS.writes < 0) ? FLAGS.num
                                                        : std::max(FLAGS.reads, FLAGS.writes);
  }

  void PrintHeader() {
    double raw_mb = (FLAGS.key_size + FLAGS.value_size) * static_cast<double>(FLAGS.num) / 1048576.0;
    printf("%s (peerbench)\n", engine_->Version().c_str());
    time_t now = time(nullptr);
    printf("Date:       %s", ctime(&now));
    printf("CPU:        %u cores\n", std::thread::hardware_concurrency());
    printf("Engine:     %s\n", FLAGS.engine.c_str());
    printf("Keys:       %d bytes each\n", FLAGS.key_size);
    printf("Values:     %d bytes each (%d bytes after compression)\n", FLAGS.value_size,
           static_cast<int>(FLAGS.value_size * FLAGS.compression_ratio + 0.5));
    printf("Entries:    %" PRId64 "\n", FLAGS.num);
    printf("RawSize:    %.1f MB (estimated)\n", raw_mb);
    printf("Compression: %s\n", FLAGS.compression_type.c_str());
    printf("Threads:    %d  reads/thread: %" PRId64 "  writes/thread: %" PRId64
           "  seed: %" PRIu64 "  duration: %d\n",
           FLAGS.threads, reads_, writes_, FLAGS.seed, FLAGS.duration);
    printf("Config:     %s\n", engine_->Config().c_str());
    printf("DB path:    [%s]\n", FLAGS.db.c_str());
    printf("------------------------------------------------\n");
    fflush(stdout);
  }

  void Run() {
    if (FLAGS.seed == 0) {
      FLAGS.seed = static_cast<uint64_t>(NowMicros());
      printf("Set seed to %" PRIu64 " because --seed was 0\n", FLAGS.seed);
    }
    if (FLAGS.benchmarks.find("stats") != std::string::npos)
      if (auto* wt = dynamic_cast<WTEngine*>(engine_.get())) wt->EnableStats();
    PrintHeader();
    engine_->Open(!FLAGS.use_existing_db);
    size_t pos = 0;
    std::string list = FLAGS.benchmarks + ",";
    while (pos < list.size()) {
      size_t comma = list.find(',', pos);
      std::string name = list.substr(pos, comma - pos);
      pos = comma + 1;
      if (name.empty()) continue;
      RunOne(name);
    }
    uint64_t t0 = NowMicros();
    engine_->Close();
    printf("close        : %.3f seconds (engine shutdown; WT final checkpoint / LMDB sync; not "
           "included above)\n",
           (NowMicros() - t0) * 1e-6);
  }

 private:
  using Method = void (Benchmark::*)(ThreadState*);

  void RunOne(const std::string& name) {
    bool fresh = false;
    int n = FLAGS.threads;
    Method m = nullptr;
    const char* title = "op";
    if (name == "fillseq") { fresh = true; m = &Benchmark::WriteSeq; title = "write"; }
    else if (name == "fillrandom") { fresh = true; m = &Benchmark::WriteRandom; title = "write"; }
    else if (name == "overwrite") { m = &Benchmark::WriteRandom; title = "write"; }
    else if (name == "readrandom") { m = &Benchmark::ReadRandom; title = "read"; }
    else if (name == "readseq") { m = &Benchmark::ReadSequential; title = "read"; }
    else if (name == "seekrandom") { m = &Benchmark::SeekRandom; title = "seek"; }
    else if (name == "updaterandom") { m = &Benchmark::UpdateRandom; title = "update"; }
    else if (name == "readwhilewriting") { m = &Benchmark::ReadWhileWriting; n++; title = "read"; }
    else if (name == "compact") { m = &Benchmark::Compact; n = 1; title = "compact"; }
    else if (name == "stats") {
      printf("\n** engine stats **\n%s\n", engine_->Stats().c_str());
      fflush(stdout);
      return;
    } else {
      fprintf(stderr, "unknown benchmark '%s'\n", name.c_str());
      exit(1);
    }
    if (fresh) {
      if (FLAGS.use_existing_db) {
        printf("%-12s : skipped (--use_existing_db is true)\n", name.c_str());
        return;
      }
      engine_->Close();
      engine_->Open(true);
    }
    RunThreads(name, n, m, title);
  }

  void RunThreads(const std::string& name, int n, Method m, const char* title) {
    res::Sample before;  // as strata bench: before the threads start, after a fresh reopen
    SharedState shared;
    shared.total = n;
    std::vector<std::unique_ptr<ThreadState>> ts;
    for (int i = 0; i < n; i++) {
      ts.push_back(std::make_unique<ThreadState>(i, FLAGS.seed + thread_counter_++));
      ts.back()->shared = &shared;
    }
    std::vector<std::thread> threads;
    for (int i = 0; i < n; i++) {
      threads.emplace_back([this, &shared, &ts, i, m] {
        ThreadState* t = ts[i].get();
        std::unique_ptr<ThreadCtx> ctx = engine_->NewCtx();  // setup is not timed
        t->ctx = ctx.get();
        {
          std::unique_lock<std::mutex> l(shared.mu);
          shared.initialized++;
          if (shared.initialized >= shared.total) shared.cv.notify_all();
          shared.cv.wait(l, [&] { return shared.start; });
        }
        t->stats.Start();
        std::optional<uint64_t> sw0 = res::OwnSwitches();
        (this->*m)(t);
        t->stats.Stop();
        std::optional<uint64_t> sw1 = res::OwnSwitches();
        if (sw0 && sw1) t->switches = *sw1 > *sw0 ? *sw1 - *sw0 : 0;
        {
          std::lock_guard<std::mutex> l(shared.mu);
          shared.done++;
          shared.cv.notify_all();
        }
        t->ctx = nullptr;
      });
    }
    {
      std::unique_lock<std::mutex> l(shared.mu);
      shared.cv.wait(l, [&] { return shared.initialized >= shared.total; });
      shared.start = true;
      shared.cv.notify_all();
      shared.cv.wait(l, [&] { return shared.done >= shared.total; });
    }
    for (auto& th : threads) th.join();

    Stats merged;
    bool first = true;
    int64_t found = 0, ops = 0;
    for (auto& t : ts) {
      if (t->exclude) continue;
      if (first) { merged = t->stats; first = false; } else merged.Merge(t->stats);
      found += t->found;
      ops += t->ops;
    }
    char msg[160] = "";
    if (name == "readrandom" || name == "seekrandom" || name == "readwhilewriting")
      snprintf(msg, sizeof(msg), "(%" PRId64 " of %" PRId64 " found)", found, ops);
    else if (name == "updaterandom")
      snprintf(msg, sizeof(msg), "( updates:%" PRId64 " found:%" PRId64 ")", ops, found);
    if (msg[0]) merged.AddMessage(msg);
    merged.Report(name, title);
    for (auto& t : ts)
      if (t->exclude) {
        printf("  (readwhilewriting background writer, not merged above)\n  ");
        t->stats.Report("bgwriter", "write");
      }
    std::optional<uint64_t> workers = 0;  // every thread's own, the writer's included
    for (auto& t : ts) {
      if (workers && t->switches) *workers += *t->switches;
      else workers = std::nullopt;
    }
    printf("%s", res::SummaryLine(name, merged.Done(), merged.Hist(), before, workers).c_str());
    fflush(stdout);
  }

  inline Slice Key(ThreadState* t, int64_t v) {
    (void)t;
    thread_local std::string buf;
    buf.resize(FLAGS.key_size);
    EncodeKey(static_cast<uint64_t>(v), &buf[0], FLAGS.key_size);
    return Slice(buf.data(), buf.size());
  }
  inline int64_t RandomKey(ThreadState* t) { return static_cast<int64_t>(t->rand() % static_cast<uint64_t>(FLAGS.num)); }

  void DoWrite(ThreadState* t, bool seq) {
    ValueGen gen;
    Duration d(writes_, !seq);
    int64_t bytes = 0, i = 0;
    while (!d.Done(1)) {
      int64_t k = seq ? i++ : RandomKey(t);
      Slice key = Key(t, k);
      Slice val = gen.Generate(FLAGS.value_size);
      engine_->Put(t->ctx, key, val);
      bytes += key.size + val.size;
      t->stats.FinishedOps(1);
    }
    t->stats.AddBytes(bytes);
  }
  void WriteSeq(ThreadState* t) { DoWrite(t, true); }
  void WriteRandom(ThreadState* t) { DoWrite(t, false); }

  void ReadRandom(ThreadState* t) {
    Duration d(reads_);
    std::string value;
    int64_t bytes = 0;
    while (!d.Done(1)) {
      Slice key = Key(t, RandomKey(t));
      t->ops++;
      if (engine_->Get(t->ctx, key, &value)) {
        t->found++;
        bytes += key.size + value.size();
      }
      t->stats.FinishedOps(1);
    }
    t->stats.AddBytes(bytes);
  }

  void ReadSequential(ThreadState* t) {
    auto it = engine_->NewIter(t->ctx);
    int64_t i = 0, bytes = 0;
    for (it->SeekToFirst(); i < reads_ && it->Valid(); it->Next()) {
      bytes += it->key().size + it->value().size;
      ++i;
      t->stats.FinishedOps(1);
    }
    t->stats.AddBytes(bytes);
  }

  // Seek to a random key with a fresh iterator, then read seek_nexts entries.
  void SeekRandom(ThreadState* t) {
    Duration d(reads_);
    int64_t bytes = 0;
    while (!d.Done(1)) {
      Slice key = Key(t, RandomKey(t));
      auto it = engine_->NewIter(t->ctx);
      it->Seek(key);
      t->ops++;
      if (it->Valid() && it->key().compare(key) == 0) t->found++;
      for (int j = 0; j < FLAGS.seek_nexts && it->Valid(); ++j) {
        bytes += it->key().size + it->value().size;
        it->Next();
      }
      t->stats.FinishedOps(1);
    }
    t->stats.AddBytes(bytes);
  }

  // Read-modify-write: Get then Put of a new value (not atomic, as db_bench).
  void UpdateRandom(ThreadState* t) {
    ValueGen gen;
    Duration d(readwrites_);
    std::string value;
    int64_t bytes = 0;
    while (!d.Done(1)) {
      Slice key = Key(t, RandomKey(t));
      t->ops++;
      if (engine_->Get(t->ctx, key, &value)) {
        t->found++;
        bytes += key.size + value.size();
      }
      Slice val = gen.Generate(FLAGS.value_size);
      engine_->Put(t->ctx, key, val);
      bytes += key.size + val.size;
      t->stats.FinishedOps(1);
    }
    t->stats.AddBytes(bytes);
  }

  // Thread 0 writes random keys until every reader is done; the others read.
  void ReadWhileWriting(ThreadState* t) {
    if (t->tid > 0) return ReadRandom(t);
    t->exclude = true;
    ValueGen gen;
    int64_t bytes = 0;
    uint64_t begin = NowMicros();
    for (;;) {
      {
        std::lock_guard<std::mutex> l(t->shared->mu);
        if (t->shared->done + 1 >= t->shared->total) break;
      }
      Slice key = Key(t, RandomKey(t));
      Slice val = gen.Generate(FLAGS.value_size);
      engine_->Put(t->ctx, key, val);
      bytes += key.size + val.size;
      t->stats.FinishedOps(1);
      if (FLAGS.benchmark_write_rate_limit > 0) {  // keep bytes <= rate * elapsed
        double allowed_us = bytes * 1e6 / FLAGS.benchmark_write_rate_limit;
        double spent_us = static_cast<double>(NowMicros() - begin);
        if (allowed_us > spent_us)
          std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(allowed_us - spent_us)));
      }
    }
    t->stats.AddBytes(bytes);
  }

  void Compact(ThreadState* t) {
    std::string note = engine_->Compact(t->ctx);
    if (!note.empty()) printf("%s\n", note.c_str());
  }

  std::unique_ptr<Engine> engine_;
  int64_t reads_, writes_, readwrites_;
  uint64_t thread_counter_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  ParseFlags(argc, argv);
  std::unique_ptr<Engine> e;
  if (FLAGS.engine == "leveldb") e = std::make_unique<LevelDBEngine>();
  else if (FLAGS.engine == "wiredtiger-btree" || FLAGS.engine == "wiredtiger") e = std::make_unique<WTEngine>(false);
  else if (FLAGS.engine == "wiredtiger-lsm") e = std::make_unique<WTEngine>(true);
  else if (FLAGS.engine == "lmdb") e = std::make_unique<LMDBEngine>();
  else Die("unknown --engine=%s (leveldb|wiredtiger-btree|wiredtiger-lsm|lmdb)", FLAGS.engine.c_str());
  Benchmark b(std::move(e));
  b.Run();
  return 0;
}
