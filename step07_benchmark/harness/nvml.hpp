// The GPU's state while the benchmark times it: SM and memory clocks, power, temperature and the
// reasons the driver gives for holding the clocks down, read through NVML. NVML comes with the
// driver, so it is loaded at run time (dlopen): a machine without a driver (CI) builds and runs
// every host program, and each reading then says "n/a". Host only; unit-tested by step07_tests.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fa2::bench {

// One reading. A field NVML could not give stays empty and prints as "n/a".
struct GpuSample {
  std::optional<unsigned> sm_mhz;             // current SM clock
  std::optional<unsigned> mem_mhz;            // current memory clock
  std::optional<double> power_w;              // board power (NVML averages it over a short window)
  std::optional<unsigned> temp_c;             // GPU die temperature
  std::optional<std::uint64_t> clock_events;  // why the clocks are below their maximum (a bit mask)
  bool empty() const { return !sm_mhz && !mem_mhz && !power_w && !temp_c && !clock_events; }
};

// NVML's reasons for holding the clocks down, by name, joined with '+' ("sw_power_cap+sw_thermal");
// "none" for 0 and hex for bits NVML may add later.
std::string clock_event_names(std::uint64_t mask);

// "SM 1980 MHz, memory 3201 MHz, 504.8 W, 49 C, clock events: none"; "n/a" for an empty reading.
std::string format_sample(const GpuSample& s);

// The CSV's fields of a reading: sm_mhz, mem_mhz, power_w, temp_c, clock_events ("n/a" where
// empty).
std::vector<std::string> sample_fields(const GpuSample& s);

// Several readings of one measurement (one per round or per launch) as one: the median of each
// numeric field over the readings that have it (the lower middle, like the times), and every
// reason that any reading gave.
GpuSample combine_samples(const std::vector<GpuSample>& samples);

// NVML's entry points this program calls, as function pointers in the C ABI of nvml.h (defined in
// nvml.cpp without nvml.h, so that no NVML header is needed to build).
struct NvmlSymbols;

// NVML for one device, open for the object's lifetime. Never throws: when the library, a
// symbol or the device is missing, available() is false, reason() says why, and sample() is
// empty.
class Nvml {
 public:
  // dlopen(library), nvmlInit, then the device with this PCI bus id (as cudaDeviceGetPCIBusId
  // writes it); when the bus id is unknown and NVML sees one GPU only, that one.
  static Nvml open(const std::string& pci_bus_id, const std::string& library = "libnvidia-ml.so.1");
  // The same with NVML's symbols looked up by `lookup` (dlsym on the library above, or the
  // tests' stand-ins).
  static Nvml open_with(const std::function<void*(const char*)>& lookup, const std::string& pci_bus_id);

  Nvml(Nvml&&) noexcept;
  Nvml& operator=(Nvml&&) noexcept;
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  ~Nvml();

  bool available() const { return state_ != nullptr && state_->device != nullptr; }
  const std::string& reason() const { return reason_; }  // why not available, or what was opened
  GpuSample sample() const;
  std::optional<unsigned> max_sm_mhz() const;  // the SM clock's ceiling, for the header

 private:
  struct State {
    void* library = nullptr;  // the dlopen handle, or null when the symbols came from elsewhere
    std::unique_ptr<NvmlSymbols> api;
    void* device = nullptr;  // an nvmlDevice_t
    bool initialised = false;
    ~State();
  };
  Nvml() = default;
  std::unique_ptr<State> state_;
  std::string reason_;
};

}  // namespace fa2::bench
