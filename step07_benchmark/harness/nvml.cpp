// NVML loaded at run time (see nvml.hpp). Only the few entry points below are used, declared
// with nvml.h's C types: enums are ints, an nvmlDevice_t is an opaque pointer.
#include "step07_benchmark/harness/nvml.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

namespace fa2::bench {

struct NvmlSymbols {
  using Device = void*;
  int (*init)() = nullptr;                                     // nvmlInit_v2
  int (*shutdown)() = nullptr;                                 // nvmlShutdown
  const char* (*error_string)(int) = nullptr;                  // nvmlErrorString
  int (*driver_version)(char*, unsigned) = nullptr;            // nvmlSystemGetDriverVersion
  int (*device_count)(unsigned*) = nullptr;                    // nvmlDeviceGetCount_v2
  int (*device_by_pci)(const char*, Device*) = nullptr;        // nvmlDeviceGetHandleByPciBusId_v2
  int (*device_by_index)(unsigned, Device*) = nullptr;         // nvmlDeviceGetHandleByIndex_v2
  int (*clock)(Device, int, unsigned*) = nullptr;              // nvmlDeviceGetClockInfo
  int (*max_clock)(Device, int, unsigned*) = nullptr;          // nvmlDeviceGetMaxClockInfo
  int (*power_mw)(Device, unsigned*) = nullptr;                // nvmlDeviceGetPowerUsage
  int (*temperature)(Device, int, unsigned*) = nullptr;        // nvmlDeviceGetTemperature
  int (*clock_events)(Device, unsigned long long*) = nullptr;  // nvmlDeviceGetCurrentClocksEventReasons
};

namespace {

constexpr int kSuccess = 0;   // NVML_SUCCESS
constexpr int kClockSm = 1;   // NVML_CLOCK_SM
constexpr int kClockMem = 2;  // NVML_CLOCK_MEM
constexpr int kTempGpu = 0;   // NVML_TEMPERATURE_GPU

// nvml.h's nvmlClocksEventReason* bits, in its order.
struct EventBit {
  std::uint64_t bit;
  const char* name;
};
constexpr EventBit kEventBits[] = {
    {0x1, "idle"},        {0x2, "app_clocks"},      {0x4, "sw_power_cap"},
    {0x8, "hw_slowdown"}, {0x10, "sync_boost"},     {0x20, "sw_thermal"},
    {0x40, "hw_thermal"}, {0x80, "hw_power_brake"}, {0x100, "display_clocks"},
};

// A symbol's address as the function pointer it is (dlsym hands back a void*; POSIX guarantees
// the two have the same representation).
template <class F>
void bind(F& target, void* address) {
  static_assert(sizeof target == sizeof address, "function and object pointers have one size here");
  std::memcpy(&target, &address, sizeof target);
}

std::string error_text(const NvmlSymbols& api, int code) {
  if (api.error_string != nullptr) {
    if (const char* text = api.error_string(code)) return text;
  }
  return "NVML error " + std::to_string(code);
}

template <class T>
const T& lower_middle(std::vector<T>& values) {
  std::sort(values.begin(), values.end());
  return values[(values.size() - 1) / 2];
}

}  // namespace

std::string clock_event_names(std::uint64_t mask) {
  if (mask == 0) return "none";
  std::string out;
  std::uint64_t known = 0;
  for (const auto& e : kEventBits) {
    known |= e.bit;
    if ((mask & e.bit) != 0) out += (out.empty() ? "" : "+") + std::string(e.name);
  }
  if (const std::uint64_t rest = mask & ~known; rest != 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(rest));
    out += (out.empty() ? "" : "+") + std::string(buf);
  }
  return out;
}

std::string format_sample(const GpuSample& s) {
  if (s.empty()) return "n/a";
  const auto or_na = [](const auto& v, const char* unit) { return v ? std::to_string(*v) + unit : std::string("n/a"); };
  std::string power = "n/a";
  if (s.power_w) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f W", *s.power_w);
    power = buf;
  }
  return "SM " + or_na(s.sm_mhz, " MHz") + ", memory " + or_na(s.mem_mhz, " MHz") + ", " + power + ", " +
         or_na(s.temp_c, " C") + ", clock events: " + (s.clock_events ? clock_event_names(*s.clock_events) : "n/a");
}

std::vector<std::string> sample_fields(const GpuSample& s) {
  const auto or_na = [](const auto& v) { return v ? std::to_string(*v) : std::string("n/a"); };
  std::string power = "n/a";
  if (s.power_w) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", *s.power_w);
    power = buf;
  }
  return {or_na(s.sm_mhz), or_na(s.mem_mhz), power, or_na(s.temp_c),
          s.clock_events ? clock_event_names(*s.clock_events) : std::string("n/a")};
}

GpuSample combine_samples(const std::vector<GpuSample>& samples) {
  std::vector<unsigned> sm, mem, temp;
  std::vector<double> power;
  std::optional<std::uint64_t> events;
  for (const auto& s : samples) {
    if (s.sm_mhz) sm.push_back(*s.sm_mhz);
    if (s.mem_mhz) mem.push_back(*s.mem_mhz);
    if (s.temp_c) temp.push_back(*s.temp_c);
    if (s.power_w) power.push_back(*s.power_w);
    if (s.clock_events) events = events.value_or(0) | *s.clock_events;
  }
  GpuSample out;
  if (!sm.empty()) out.sm_mhz = lower_middle(sm);
  if (!mem.empty()) out.mem_mhz = lower_middle(mem);
  if (!temp.empty()) out.temp_c = lower_middle(temp);
  if (!power.empty()) out.power_w = lower_middle(power);
  out.clock_events = events;
  return out;
}

Nvml::State::~State() {
  if (initialised && api && api->shutdown != nullptr) api->shutdown();
  if (library != nullptr) dlclose(library);
}

Nvml::Nvml(Nvml&&) noexcept = default;
Nvml& Nvml::operator=(Nvml&&) noexcept = default;
Nvml::~Nvml() = default;

Nvml Nvml::open(const std::string& pci_bus_id, const std::string& library) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    Nvml none;
    const char* why = dlerror();
    none.reason_ = "NVML not loaded (" + library + ": " + (why != nullptr ? why : "dlopen failed") +
                   "): clocks, power and temperature are n/a";
    return none;
  }
  Nvml nvml = open_with([handle](const char* name) { return dlsym(handle, name); }, pci_bus_id);
  if (nvml.state_) {
    nvml.state_->library = handle;  // closed with the state, after nvmlShutdown
  } else {
    dlclose(handle);
  }
  return nvml;
}

Nvml Nvml::open_with(const std::function<void*(const char*)>& lookup, const std::string& pci_bus_id) {
  Nvml nvml;
  auto api = std::make_unique<NvmlSymbols>();
  bind(api->init, lookup("nvmlInit_v2"));
  bind(api->shutdown, lookup("nvmlShutdown"));
  bind(api->error_string, lookup("nvmlErrorString"));
  bind(api->driver_version, lookup("nvmlSystemGetDriverVersion"));
  bind(api->device_count, lookup("nvmlDeviceGetCount_v2"));
  bind(api->device_by_pci, lookup("nvmlDeviceGetHandleByPciBusId_v2"));
  bind(api->device_by_index, lookup("nvmlDeviceGetHandleByIndex_v2"));
  bind(api->clock, lookup("nvmlDeviceGetClockInfo"));
  bind(api->max_clock, lookup("nvmlDeviceGetMaxClockInfo"));
  bind(api->power_mw, lookup("nvmlDeviceGetPowerUsage"));
  bind(api->temperature, lookup("nvmlDeviceGetTemperature"));
  // Drivers of CUDA 12.2 and later name it ClocksEventReasons; older ones ClocksThrottleReasons.
  bind(api->clock_events, lookup("nvmlDeviceGetCurrentClocksEventReasons"));
  if (api->clock_events == nullptr) bind(api->clock_events, lookup("nvmlDeviceGetCurrentClocksThrottleReasons"));
  if (api->init == nullptr || api->shutdown == nullptr || api->device_by_pci == nullptr || api->clock == nullptr) {
    nvml.reason_ =
        "NVML lacks nvmlInit_v2, nvmlShutdown, nvmlDeviceGetHandleByPciBusId_v2 or nvmlDeviceGetClockInfo: "
        "clocks, power and temperature are n/a";
    return nvml;
  }
  nvml.state_ = std::make_unique<State>();
  State& state = *nvml.state_;
  state.api = std::move(api);
  const NvmlSymbols& f = *state.api;
  if (const int rc = f.init(); rc != kSuccess) {
    nvml.reason_ = "nvmlInit failed (" + error_text(f, rc) + "): clocks, power and temperature are n/a";
    return nvml;
  }
  state.initialised = true;
  void* device = nullptr;
  int rc = f.device_by_pci(pci_bus_id.c_str(), &device);
  std::string how = "PCI bus id " + pci_bus_id;
  if (rc != kSuccess) {
    unsigned count = 0;
    if (f.device_count != nullptr && f.device_by_index != nullptr && f.device_count(&count) == kSuccess && count == 1 &&
        f.device_by_index(0, &device) == kSuccess) {
      rc = kSuccess;
      how = "the only GPU NVML sees (PCI bus id " + pci_bus_id + " unknown to it)";
    }
  }
  if (rc != kSuccess || device == nullptr) {
    nvml.reason_ = "NVML has no device with PCI bus id " + pci_bus_id + " (" + error_text(f, rc) +
                   "): clocks, power and temperature are n/a";
    return nvml;
  }
  state.device = device;
  std::string driver = "unknown";
  if (f.driver_version != nullptr) {
    char version[96] = {};
    if (f.driver_version(version, sizeof version) == kSuccess) driver = version;
  }
  nvml.reason_ = "NVML, driver " + driver + ", " + how;
  return nvml;
}

GpuSample Nvml::sample() const {
  GpuSample s;
  if (!available()) return s;
  const NvmlSymbols& f = *state_->api;
  void* device = state_->device;
  unsigned value = 0;
  if (f.clock(device, kClockSm, &value) == kSuccess) s.sm_mhz = value;
  if (f.clock(device, kClockMem, &value) == kSuccess) s.mem_mhz = value;
  if (f.power_mw != nullptr && f.power_mw(device, &value) == kSuccess) s.power_w = static_cast<double>(value) / 1000.0;
  if (f.temperature != nullptr && f.temperature(device, kTempGpu, &value) == kSuccess) s.temp_c = value;
  unsigned long long events = 0;
  if (f.clock_events != nullptr && f.clock_events(device, &events) == kSuccess) s.clock_events = events;
  return s;
}

std::optional<unsigned> Nvml::max_sm_mhz() const {
  if (!available() || state_->api->max_clock == nullptr) return std::nullopt;
  unsigned value = 0;
  if (state_->api->max_clock(state_->device, kClockSm, &value) != kSuccess) return std::nullopt;
  return value;
}

}  // namespace fa2::bench
