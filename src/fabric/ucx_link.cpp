// The link scan over UCX's tag API (linkscan.transport: ucx). UCX is loaded here, at first use
// (core/dynamic_library.hpp), never linked: a run without the link scan maps none of it. The
// call sequence follows UCX 1.13's ucp_hello_world: config, context, worker, addresses
// exchanged over MPI, one endpoint per peer, tag send/receive, flush-close.
#include <ucp/api/ucp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <regex>
#include <utility>
#include <vector>

#include "core/dynamic_library.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "fabric/link.hpp"
#include "runtime/agree.hpp"
#include "runtime/mpi.hpp"

#if SHAKEDOWN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "core/cuda_check.hpp"
#endif

namespace shakedown::fabric {

// UCX 1.14 added the transports an endpoint uses to ucp_ep_query; older headers (Debian 12's
// 1.13) leave only ucp_ep_print_info's text to parse.
#if UCP_API_VERSION >= UCP_VERSION(1, 14)
#define SHAKEDOWN_UCP_EP_TRANSPORTS 1
#endif

namespace {

constexpr const char* kLibrary = "libucp.so.0";

// The UCX functions the scan calls, looked up in libucp (and libucs, which it loads).
struct UcxApi {
  DynamicLibrary lib;
  decltype(&ucp_config_read) config_read = nullptr;
  decltype(&ucp_config_modify) config_modify = nullptr;
  decltype(&ucp_config_release) config_release = nullptr;
  decltype(&ucp_init_version) init_version = nullptr;
  decltype(&ucp_cleanup) cleanup = nullptr;
  decltype(&ucp_context_query) context_query = nullptr;
  decltype(&ucp_worker_create) worker_create = nullptr;
  decltype(&ucp_worker_destroy) worker_destroy = nullptr;
  decltype(&ucp_worker_get_address) worker_get_address = nullptr;
  decltype(&ucp_worker_release_address) worker_release_address = nullptr;
  decltype(&ucp_worker_progress) worker_progress = nullptr;
  decltype(&ucp_ep_create) ep_create = nullptr;
  decltype(&ucp_ep_close_nbx) ep_close_nbx = nullptr;
  decltype(&ucp_ep_print_info) ep_print_info = nullptr;
  decltype(&ucp_tag_send_nbx) tag_send_nbx = nullptr;
  decltype(&ucp_tag_recv_nbx) tag_recv_nbx = nullptr;
  decltype(&ucp_request_check_status) request_check_status = nullptr;
  decltype(&ucp_request_free) request_free = nullptr;
  decltype(&ucs_status_string) status_string = nullptr;
#ifdef SHAKEDOWN_UCP_EP_TRANSPORTS
  decltype(&ucp_ep_query) ep_query = nullptr;  // optional: ucp_ep_print_info stands in
#endif
  std::string missing;  // the first symbol not found, "" when all were

  template <class Fn>
  void find(Fn& fn, const char* name) {
    fn = lib.function<Fn>(name);
    if (fn == nullptr && missing.empty()) missing = name;
  }

  explicit UcxApi(DynamicLibrary l) : lib(std::move(l)) {
    find(config_read, "ucp_config_read");
    find(config_modify, "ucp_config_modify");
    find(config_release, "ucp_config_release");
    find(init_version, "ucp_init_version");
    find(cleanup, "ucp_cleanup");
    find(context_query, "ucp_context_query");
    find(worker_create, "ucp_worker_create");
    find(worker_destroy, "ucp_worker_destroy");
    find(worker_get_address, "ucp_worker_get_address");
    find(worker_release_address, "ucp_worker_release_address");
    find(worker_progress, "ucp_worker_progress");
    find(ep_create, "ucp_ep_create");
    find(ep_close_nbx, "ucp_ep_close_nbx");
    find(ep_print_info, "ucp_ep_print_info");
    find(tag_send_nbx, "ucp_tag_send_nbx");
    find(tag_recv_nbx, "ucp_tag_recv_nbx");
    find(request_check_status, "ucp_request_check_status");
    find(request_free, "ucp_request_free");
    find(status_string, "ucs_status_string");
#ifdef SHAKEDOWN_UCP_EP_TRANSPORTS
    ep_query = lib.function<decltype(ep_query)>("ucp_ep_query");
#endif
  }
};

// The one UCX check: throws RuntimeFault naming the call and UCX's own words.
void ucx_check(const UcxApi& api, ucs_status_t status, const char* expr, const char* file,
               int line) {
  if (status == UCS_OK) return;
  throw RuntimeFault(std::string("UCX error in ") + expr + " at " + file + ":" +
                     std::to_string(line) + ": " + api.status_string(status));
}
#define SD_UCX_CHECK(api, call) ucx_check((api), (call), #call, __FILE__, __LINE__)

constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};

ucp_tag_t tag_of(Message m, int sender) {
  return (static_cast<ucp_tag_t>(m) << 32) | static_cast<std::uint32_t>(sender);
}

// Loads libucp in this process. Unless MPI loaded it already (Open MPI's UCX transport), the
// load is tried first in a child process: libucs's constructors abort the process on some
// hosts (a 64-character host name), and that must be a message, not a dead rank.
DynamicLibrary load_ucx(std::string& why) {
  if (!DynamicLibrary::if_loaded(kLibrary).loaded()) {
    const ChildProbe probe = probe_in_child(
        [] {
          DynamicLibrary lib = DynamicLibrary::open(kLibrary);
          return lib.loaded() ? std::string("ok") : lib.error();
        },
        std::chrono::seconds(20));
    if (!probe.ok || probe.text != "ok") {
      why = "loading " + std::string(kLibrary) + " " + (probe.ok ? "failed: " : "") + probe.text;
      return {};
    }
  }
  DynamicLibrary lib = DynamicLibrary::open(kLibrary);
  if (!lib.loaded()) why = lib.error();
  return lib;
}

// A bandwidth buffer: host memory, or a CUDA device's.
class MessageBuffer {
 public:
  MessageBuffer() = default;
  MessageBuffer(std::size_t bytes, int cuda_device) : bytes_(bytes) {
    if (cuda_device < 0) {
      host_.assign(bytes, 0);
      return;
    }
#if SHAKEDOWN_HAVE_CUDA
    SD_CUDA_CHECK(cudaSetDevice(cuda_device));
    SD_CUDA_CHECK(cudaMalloc(&device_ptr_, bytes));
    SD_CUDA_CHECK(cudaMemset(device_ptr_, 0, bytes));
    SD_CUDA_CHECK(cudaDeviceSynchronize());
#else
    throw RuntimeFault("linkscan.memory: cuda in a build without CUDA");
#endif
  }
  ~MessageBuffer() {
#if SHAKEDOWN_HAVE_CUDA
    if (device_ptr_ != nullptr) (void)cudaFree(device_ptr_);
#endif
  }
  MessageBuffer(MessageBuffer&& o) noexcept
      : host_(std::move(o.host_)),
        bytes_(std::exchange(o.bytes_, 0)),
        device_ptr_(std::exchange(o.device_ptr_, nullptr)) {}
  MessageBuffer& operator=(MessageBuffer&& o) noexcept {
    std::swap(host_, o.host_);
    std::swap(bytes_, o.bytes_);
    std::swap(device_ptr_, o.device_ptr_);
    return *this;
  }
  MessageBuffer(const MessageBuffer&) = delete;
  MessageBuffer& operator=(const MessageBuffer&) = delete;
  void* data() {
    return device_ptr_ != nullptr ? device_ptr_ : host_.data();
  }
  std::size_t size() const {
    return bytes_;
  }
  bool cuda() const {
    return device_ptr_ != nullptr;
  }

 private:
  std::vector<unsigned char> host_;
  std::size_t bytes_ = 0;
  void* device_ptr_ = nullptr;
};

class UcxLink final : public Link {
 public:
  UcxLink(int rank, const LinkOptions& o, UcxApi api)
      : api_(std::move(api)),
        rank_(rank),
        net_devices_(o.net_devices),
        bytes_(o.bytes),
        bidirectional_(o.bidirectional),
        small_(std::max<std::size_t>(o.lat_bytes, 1)),
        window_(o.window) {}

  // Why this rank cannot put its bandwidth messages in GPU memory ("" when it can): no GPU, or a
  // UCX whose context reports no CUDA memory type (built without its cuda module). After start.
  std::string cuda_missing(const LinkOptions& o, bool detail) const {
    if (o.cuda_device < 0) {
      return "rank " + std::to_string(rank_) + " has no GPU" +
             (detail && !o.no_gpu_reason.empty() ? " (" + o.no_gpu_reason + ")" : "");
    }
    if (!cuda_memory_) {
      return "UCX on rank " + std::to_string(rank_) + " reports no CUDA memory" +
             (detail ? " (ucp_context_query's memory types: " + memory_types_ +
                           "; install UCX's cuda transport, e.g. a UCX built --with-cuda)"
                     : "");
    }
    return "";
  }

  // The bandwidth buffers, in host memory or this rank's GPU (cuda_device >= 0).
  void allocate(int cuda_device, std::string note) {
    buffer_ = MessageBuffer(bytes_, cuda_device);
    if (bidirectional_) inbox_ = MessageBuffer(bytes_, cuda_device);
    memory_note_ = std::move(note);
  }
  std::string memory() const override { return buffer_.cuda() ? "cuda" : "host"; }
  std::string memory_note() const override { return memory_note_; }

  // This rank's context and worker (the destructor releases what was made if this throws).
  void start() {
    ucp_config_t* config = nullptr;
    SD_UCX_CHECK(api_, api_.config_read(nullptr, nullptr, &config));
    if (!net_devices_.empty()) {
      const ucs_status_t s = api_.config_modify(config, "NET_DEVICES", net_devices_.c_str());
      if (s != UCS_OK) {
        api_.config_release(config);
        throw UsageError("linkscan.rails: UCX refuses NET_DEVICES='" + net_devices_ + "' on rank " +
                         std::to_string(rank_) + ": " + api_.status_string(s));
      }
    }
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_TAG;
    const ucs_status_t init =
        api_.init_version(UCP_API_MAJOR, UCP_API_MINOR, &params, config, &context_);
    api_.config_release(config);
    SD_UCX_CHECK(api_, init);
    // The memory types UCX's transports handle here: CUDA only with its cuda module.
    ucp_context_attr_t attr{};
    attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
    SD_UCX_CHECK(api_, api_.context_query(context_, &attr));
    cuda_memory_ = (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
    std::vector<std::string> types;
    for (int t = 0; t < UCS_MEMORY_TYPE_LAST; ++t) {
      if ((attr.memory_types & UCS_BIT(t)) != 0) {
        types.push_back(t == UCS_MEMORY_TYPE_HOST           ? "host"
                        : t == UCS_MEMORY_TYPE_CUDA         ? "cuda"
                        : t == UCS_MEMORY_TYPE_CUDA_MANAGED ? "cuda-managed"
                        : t == UCS_MEMORY_TYPE_ROCM         ? "rocm"
                                                            : "type " + std::to_string(t));
      }
    }
    memory_types_ = types.empty() ? "none" : join(types, ", ");
    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
    SD_UCX_CHECK(api_, api_.worker_create(context_, &wp, &worker_));
    ucp_address_t* address = nullptr;
    std::size_t length = 0;
    SD_UCX_CHECK(api_, api_.worker_get_address(worker_, &address, &length));
    mine_.assign(reinterpret_cast<const char*>(address), length);
    api_.worker_release_address(worker_, address);
  }

  // Collective: every rank learns every worker's address.
  void exchange_addresses(MPI_Comm world) { addresses_ = allgather_strings(world, mine_); }

  ~UcxLink() override {
    // Flush-close every endpoint (bounded: a peer that is gone must not hang the exit).
    for (auto& [peer, ep] : endpoints_) {
      ucp_request_param_t p{};
      ucs_status_ptr_t r = api_.ep_close_nbx(ep, &p);
      if (UCS_PTR_IS_PTR(r)) {
        const double until = seconds_now() + 5;
        while (api_.request_check_status(r) == UCS_INPROGRESS && seconds_now() < until) {
          api_.worker_progress(worker_);
        }
        api_.request_free(r);
      }
    }
    if (worker_ != nullptr) api_.worker_destroy(worker_);
    if (context_ != nullptr) api_.cleanup(context_);
  }

  std::string kind() const override { return "ucx"; }

  void connect(int peer) override {
    if (endpoints_.count(peer) > 0) return;
    const std::string& address = addresses_.at(static_cast<std::size_t>(peer));
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep.address = reinterpret_cast<const ucp_address_t*>(address.data());
    ep.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    ucp_ep_h handle = nullptr;
    SD_UCX_CHECK(api_, api_.ep_create(worker_, &ep, &handle));
    endpoints_[peer] = handle;
  }

  std::string transport_to(int peer) override {
    const auto it = endpoints_.find(peer);
    if (it == endpoints_.end()) return "";
#ifdef SHAKEDOWN_UCP_EP_TRANSPORTS
    if (std::string queried = queried_transports(it->second); !queried.empty()) return queried;
#endif
    char* text = nullptr;
    std::size_t size = 0;
    FILE* f = open_memstream(&text, &size);
    if (f == nullptr) return "";
    api_.ep_print_info(it->second, f);
    std::fclose(f);
    const std::string info(text, size);
    std::free(text);
    return lanes(info);
  }

  double window_send(int peer) override {
    wait(recv(small_.data(), 1, tag_of(Message::kReady, peer)));
    const double start = seconds_now();
    std::vector<ucs_status_ptr_t> requests;
    requests.reserve(static_cast<std::size_t>(window_));
    for (int i = 0; i < window_; ++i) {
      requests.push_back(data_send(peer, buffer_));
    }
    for (ucs_status_ptr_t r : requests) wait(r);
    wait(recv(small_.data(), 1, tag_of(Message::kAck, peer)));
    return seconds_now() - start;
  }

  void window_recv(int peer) override {
    std::vector<ucs_status_ptr_t> requests;
    requests.reserve(static_cast<std::size_t>(window_));
    for (int i = 0; i < window_; ++i) {
      requests.push_back(data_recv(peer, buffer_));
    }
    wait(send(peer, small_.data(), 1, tag_of(Message::kReady, rank_)));
    for (ucs_status_ptr_t r : requests) wait(r);
    wait(send(peer, small_.data(), 1, tag_of(Message::kAck, rank_)));
  }

  double window_both(int peer, bool initiator) override {
    if (inbox_.size() != buffer_.size()) {
      throw InternalError("linkscan: a bidirectional window without LinkOptions::bidirectional");
    }
    std::vector<ucs_status_ptr_t> requests;
    requests.reserve(2 * static_cast<std::size_t>(window_));
    for (int i = 0; i < window_; ++i) {
      requests.push_back(data_recv(peer, inbox_));
    }
    char ready = 0, ack = 0;
    ucs_status_ptr_t peer_ready = recv(&ready, 1, tag_of(Message::kReady, peer));
    wait(send(peer, small_.data(), 1, tag_of(Message::kReady, rank_)));
    wait(peer_ready);
    const double start = seconds_now();
    for (int i = 0; i < window_; ++i) {
      requests.push_back(data_send(peer, buffer_));
    }
    ucs_status_ptr_t peer_done = recv(&ack, 1, tag_of(Message::kAck, peer));
    for (ucs_status_ptr_t r : requests) wait(r);
    wait(send(peer, small_.data(), 1, tag_of(Message::kAck, rank_)));
    wait(peer_done);
    return initiator ? seconds_now() - start : 0;
  }

  double ping(int peer) override {
    const double start = seconds_now();
    ucs_status_ptr_t r = recv(small_.data(), small_.size(), tag_of(Message::kPong, peer));
    wait(send(peer, small_.data(), small_.size(), tag_of(Message::kPing, rank_)));
    wait(r);
    return seconds_now() - start;
  }

  void pong(int peer) override {
    wait(recv(small_.data(), small_.size(), tag_of(Message::kPing, peer)));
    wait(send(peer, small_.data(), small_.size(), tag_of(Message::kPong, rank_)));
  }

 private:
#ifdef SHAKEDOWN_UCP_EP_TRANSPORTS
  // UCX 1.14+: the endpoint's transports and devices as ucp_ep_query lists them, in the form the
  // text gives ("rc_mlx5/mlx5_0:1,posix/memory"); "" when the library cannot say (a library
  // older than the headers ignores the field and leaves the entries empty).
  std::string queried_transports(ucp_ep_h ep) const {
    if (api_.ep_query == nullptr) return "";
    std::array<ucp_transport_entry_t, 32> entries{};
    ucp_ep_attr_t attr{};
    attr.field_mask = UCP_EP_ATTR_FIELD_TRANSPORTS;
    attr.transports.entries = entries.data();
    attr.transports.num_entries = static_cast<unsigned>(entries.size());
    attr.transports.entry_size = sizeof(ucp_transport_entry_t);
    if (api_.ep_query(ep, &attr) != UCS_OK) return "";
    std::vector<std::string> seen;
    for (unsigned i = 0; i < attr.transports.num_entries && i < entries.size(); ++i) {
      const ucp_transport_entry_t& e = entries[i];
      if (e.transport_name == nullptr || e.device_name == nullptr) continue;
      const std::string name = std::string(e.transport_name) + "/" + e.device_name;
      if (std::find(seen.begin(), seen.end(), name) == seen.end()) seen.push_back(name);
    }
    return join(seen, ",");
  }
#endif

  // "lane[0]:  2:posix/memory.0 md[1] -> ..." -> "posix/memory", each transport/device once.
  static std::string lanes(const std::string& info) {
    static const std::regex lane(R"(lane\[\d+\]:\s*\d+:([^\s/]+/\S+?)\.\d+\s+md)");
    std::vector<std::string> seen;
    for (std::sregex_iterator it(info.begin(), info.end(), lane), end; it != end; ++it) {
      const std::string name = (*it)[1];
      if (std::find(seen.begin(), seen.end(), name) == seen.end()) seen.push_back(name);
    }
    return join(seen, ",");
  }

  // A bandwidth message from or into `b`, its memory type said (UCX need not detect it).
  ucs_status_ptr_t data_send(int peer, MessageBuffer& b) {
    return send(peer, b.data(), b.size(), tag_of(Message::kData, rank_), b.cuda());
  }
  ucs_status_ptr_t data_recv(int peer, MessageBuffer& b) {
    return recv(b.data(), b.size(), tag_of(Message::kData, peer), b.cuda());
  }
  static ucp_request_param_t params(bool cuda) {
    ucp_request_param_t p{};
    if (cuda) {
      p.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
      p.memory_type = UCS_MEMORY_TYPE_CUDA;
    }
    return p;
  }

  ucs_status_ptr_t send(int peer, void* data, std::size_t bytes, ucp_tag_t tag, bool cuda = false) {
    connect(peer);
    ucp_request_param_t p = params(cuda);
    ucs_status_ptr_t r = api_.tag_send_nbx(endpoints_.at(peer), data, bytes, tag, &p);
    if (UCS_PTR_IS_ERR(r)) SD_UCX_CHECK(api_, UCS_PTR_STATUS(r));
    return r;
  }

  ucs_status_ptr_t recv(void* data, std::size_t bytes, ucp_tag_t tag, bool cuda = false) {
    ucp_request_param_t p = params(cuda);
    ucs_status_ptr_t r = api_.tag_recv_nbx(worker_, data, bytes, tag, kFullMask, &p);
    if (UCS_PTR_IS_ERR(r)) SD_UCX_CHECK(api_, UCS_PTR_STATUS(r));
    return r;
  }

  void wait(ucs_status_ptr_t r) {
    if (r == nullptr) return;  // completed at once
    ucs_status_t status = UCS_INPROGRESS;
    while ((status = api_.request_check_status(r)) == UCS_INPROGRESS) {
      api_.worker_progress(worker_);
    }
    api_.request_free(r);
    SD_UCX_CHECK(api_, status);
  }

  UcxApi api_;
  int rank_ = 0;
  std::string net_devices_;
  std::string mine_;  // this worker's address
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::vector<std::string> addresses_;
  std::map<int, ucp_ep_h> endpoints_;
  std::size_t bytes_ = 0;
  bool bidirectional_ = false;
  MessageBuffer buffer_;
  std::vector<unsigned char> small_;
  MessageBuffer inbox_;  // what the peer sends in a bidirectional window
  int window_ = 32;
  bool cuda_memory_ = false;  // UCX's context reports CUDA memory
  std::string memory_types_;  // the types it reports, for messages
  std::string memory_note_;   // why auto chose host memory
};

}  // namespace

std::unique_ptr<Link> make_ucx_link(MPI_Comm world, const LinkOptions& options) {
  const int rank = comm_rank(world);
  std::unique_ptr<UcxLink> link = agreed(world, [&] {
    std::string why;
    DynamicLibrary lib = load_ucx(why);
    if (!lib.loaded()) {
      throw UsageError("linkscan.transport ucx: rank " + std::to_string(rank) +
                       " cannot load UCX (" + why +
                       "); install libucx0 or set linkscan.transport: mpi");
    }
    UcxApi api(std::move(lib));
    if (!api.missing.empty()) {
      throw UsageError("linkscan.transport ucx: rank " + std::to_string(rank) + ": " + kLibrary +
                       " lacks " + api.missing +
                       " (UCX 1.13 or later is needed); set linkscan.transport: mpi");
    }
    auto made = std::make_unique<UcxLink>(rank, options, std::move(api));
#if SHAKEDOWN_HAVE_CUDA
    // The rank's GPU current before UCX starts (as ucx_perftest does), so its cuda transports
    // see the context the buffers will live in.
    if (options.memory != "host" && options.cuda_device >= 0) {
      SD_CUDA_CHECK(cudaSetDevice(options.cuda_device));
    }
#endif
    made->start();
    return made;
  });
  link->exchange_addresses(world);
  // Host or GPU memory: every rank the same. Why a rank cannot use its GPU, from every rank.
  const std::vector<std::string> missing = allgather_strings(
      world, options.memory == "host" ? std::string()
                                      : link->cuda_missing(options, options.memory == "cuda"));
  std::string first_missing;
  for (const std::string& m : missing) {
    if (!m.empty() && first_missing.empty()) first_missing = m;
  }
  if (options.memory == "cuda" && !first_missing.empty()) {
    agreed(world, [&] {
      throw UsageError("linkscan.memory: cuda needs GPU memory that UCX can send on every rank: " +
                       first_missing + "; use linkscan.memory: host or auto");
    });
  }
  const bool cuda = options.memory != "host" && first_missing.empty();
  agreed(world, [&] {
    link->allocate(cuda ? options.cuda_device : -1,
                   options.memory == "auto" && !cuda ? "auto: " + first_missing : "");
  });
  return link;
}

}  // namespace shakedown::fabric
