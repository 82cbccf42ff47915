package profiler

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
)

// SchemaVersion is the version of the run-record schema this package
// writes; readers accept records of this version only. docs/run-record.md
// documents every field and its unit.
const SchemaVersion = 1

// The kinds of record.
const (
	KindMeasured  = "measured"
	KindPredicted = "predicted"
)

// Record is one run, measured or predicted: one line of a runs.jsonl
// dataset. Units live in field names (Nanos, Bytes); times of events are
// nanoseconds from the start of their step.
type Record struct {
	Schema int    `json:"schema"`
	Kind   string `json:"kind"`
	// ID identifies the run; CreatedUTC is when it was recorded (RFC
	// 3339).
	ID         string `json:"id"`
	CreatedUTC string `json:"created_utc"`

	Env       Environment `json:"environment"`
	Config    RunConfig   `json:"config"`
	Partition []Stage     `json:"partition"`
	// Oversubscribed is set when devices × threads exceeds the cores.
	Oversubscribed bool `json:"oversubscribed"`
	// Round is which round of a sweep measured in rounds (profile
	// --rounds) the run was, from 1; 0, and left out, for a run outside
	// rounds. The rounds of one configuration are repeated runs of it.
	Round int `json:"round,omitempty"`

	// Steps are the measured steps (warm-up steps are not recorded,
	// except their losses in WarmupLosses).
	Steps        []Step    `json:"steps"`
	WarmupLosses []float64 `json:"warmup_losses,omitempty"`
	// Summary aggregates the measured steps.
	Summary Summary `json:"summary"`
	// Devices aggregates each device over the measured steps.
	Devices []Device `json:"devices"`
	// Blocks holds each block's compute times.
	Blocks []BlockTiming `json:"blocks,omitempty"`
	// Events are every op of every measured step on every device.
	Events []Event `json:"events,omitempty"`
}

// Environment is where a run ran.
type Environment struct {
	Host      string `json:"host"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	CPUModel  string `json:"cpu_model"`
	Cores     int    `json:"cores"`
	GoVersion string `json:"go_version"`
	// Version and Revision identify the pipecast build.
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Backend  string `json:"backend"`
	// Devices lists the devices of the run in device order.
	Devices []DeviceInfo `json:"devices"`
	// HugePages says whether the backend's tensor memory sat on
	// transparent huge pages: "advised", "off" or "unavailable" (see the
	// CPU backend); empty for a backend that does not say. Step times
	// depend on it by 10–20 % on the CPU backend.
	HugePages string `json:"huge_pages,omitempty"`
	// PeakRSSBytes is the process's peak resident set size when the
	// record was made (the high-water mark of the whole process so far).
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// Calibration measures the transfer path the run used, so that even
	// a single-device record lets the predictor cost transfers.
	Calibration *Calibration `json:"calibration,omitempty"`
	// Interference measures how much devices computing at once on this
	// machine slow each other, so that even a single-device record lets
	// the predictor forecast co-located devices.
	Interference *Interference `json:"interference,omitempty"`
	// Probe measures how much the machine's other tenants disturbed the
	// run: a fixed piece of work timed before each measured step; nil
	// where not measured (predicted records, older builds).
	Probe *Probe `json:"probe,omitempty"`
	// Transport is how the devices moved data: TransportInProcess (one
	// process, the default; records that leave it out are in-process) or
	// TransportMPI (one process per device); TransportVersion names the
	// library behind it (the MPI library's own version string).
	Transport        string `json:"transport,omitempty"`
	TransportVersion string `json:"transport_version,omitempty"`
	// Ranks lists the processes of a multi-process run, one per device
	// in rank order; omitted for a run in one process.
	Ranks []RankInfo `json:"ranks,omitempty"`
	// ClockResidualNanos is how far the clock offsets between the ranks,
	// estimated before and after the run, moved during it (the largest
	// over ranks): the uncertainty of placing one rank's events on
	// another's time axis. 0 for a run in one process.
	ClockResidualNanos int64 `json:"clock_residual_nanos,omitempty"`
}

// The transports a run may use.
const (
	TransportInProcess = "inprocess"
	TransportMPI       = "mpi"
)

// TransportOf returns the transport of env, TransportInProcess for a
// record that names none.
func TransportOf(env *Environment) string {
	if env.Transport == "" {
		return TransportInProcess
	}
	return env.Transport
}

// RankInfo is one process of a multi-process run.
type RankInfo struct {
	Rank     int    `json:"rank"`
	Host     string `json:"host"`
	PID      int    `json:"pid"`
	CPUModel string `json:"cpu_model"`
	Threads  int    `json:"threads"`
}

// DeviceInfo names a device and its threads, and describes the GPU
// behind it for a GPU backend.
type DeviceInfo struct {
	Name    string   `json:"name"`
	Threads int      `json:"threads"`
	GPU     *GPUInfo `json:"gpu,omitempty"`
}

// GPUInfo describes the GPU a device ran on.
type GPUInfo struct {
	// Model is the GPU's name and Ordinal its index on the host.
	Model   string `json:"model"`
	Ordinal int    `json:"ordinal"`
	// Share is how the device had the GPU: "whole" (one device per GPU)
	// or "stream" (one stream among the run's devices on that GPU, all
	// multiprocessors shared).
	Share string `json:"share"`
	// Driver is the CUDA driver's version; Libraries the matrix and
	// convolution libraries the kernels used, with versions (none: the
	// backend's own kernels computed everything).
	Driver    string   `json:"driver,omitempty"`
	Libraries []string `json:"libraries,omitempty"`
	// MemoryFreeBytes and MemoryTotalBytes are the GPU's memory as the
	// driver reported it when the run began.
	MemoryFreeBytes  int64 `json:"memory_free_bytes,omitempty"`
	MemoryTotalBytes int64 `json:"memory_total_bytes,omitempty"`
}

// Calibration is a short measurement of transfers between devices of the
// run's backend.
type Calibration struct {
	// Samples are single measurements: a kind ("p2p", "allgather",
	// "alltoall"), the devices taking part, the bytes each piece carries
	// and the median time of a few repetitions.
	Samples []TransferSample `json:"samples"`
	// LatencyNanos and BandwidthBytesPerSecond fit t = latency +
	// bytes/bandwidth to the point-to-point samples.
	LatencyNanos            float64 `json:"latency_nanos"`
	BandwidthBytesPerSecond float64 `json:"bandwidth_bytes_per_second"`
}

// Interference is a measurement of co-location interference: the same
// work timed on one device alone and on several devices at once.
type Interference struct {
	// Work says what was timed.
	Work string `json:"work"`
	// Levels holds one entry per number of devices computing at once,
	// from 1 (factor 1) up.
	Levels []InterferenceLevel `json:"levels"`
}

// InterferenceLevel is the slowdown at one concurrency: the median time
// of the work with Devices devices computing at once over its median
// alone, and the extremes of the timed repetitions on the same scale.
type InterferenceLevel struct {
	Devices int     `json:"devices"`
	Factor  float64 `json:"factor"`
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
	// BackwardFactor, BackwardMin and BackwardMax are the same of the
	// stages' backward passes, run against each other; 0, and left out,
	// in records measured before backwards were (Factor stands for both
	// there). The predictor applies Factor to every op (see its
	// fitInterference for why).
	BackwardFactor float64 `json:"backward_factor,omitempty"`
	BackwardMin    float64 `json:"backward_min,omitempty"`
	BackwardMax    float64 `json:"backward_max,omitempty"`
}

// TransferSample is one calibration measurement.
type TransferSample struct {
	Kind    string `json:"kind"`
	Devices int    `json:"devices"`
	Bytes   int64  `json:"bytes"`
	Nanos   int64  `json:"nanos"`
}

// RunConfig is what was run.
type RunConfig struct {
	Model string `json:"model"`
	// SizeRecord is the model's size as built, its family's fields.
	models.SizeRecord
	Batch int `json:"batch"`
	// RecordOptions are the schedule's: K, M, its name and the options
	// it uses.
	schedule.RecordOptions
	Balance string `json:"balance"`
	// BalanceNanos are the block times a partition by time (or speed)
	// balanced:
	// each block's forward and backward at the micro-batch size, in ns,
	// measured by the runner (the median of repeated passes) once per
	// workload of a sweep. Absent for other balances and where nothing
	// was measured (a single stage outside a sweep, older records).
	BalanceNanos []int64 `json:"balance_nanos,omitempty"`
	Threads      int     `json:"threads"`
	// DeviceThreads are the pipeline devices' worker threads where they
	// differ (every replica's device k ran DeviceThreads[k]; Threads is
	// then the largest), omitted where all ran Threads.
	DeviceThreads []int `json:"device_threads,omitempty"`
	// DeviceSpeeds are the pipeline devices' measured speeds relative to
	// a device of Threads threads: the model's block times at the
	// micro-batch size on a device of Threads threads over those on the
	// device's own (0.5: it took twice as long). Omitted where the devices
	// are alike; an injected straggler is in StragglerFactor, not here.
	DeviceSpeeds []float64 `json:"device_speeds,omitempty"`
	Steps        int       `json:"steps"`
	Warmup       int       `json:"warmup"`
	Seed         uint64    `json:"seed"`
	Dataset      string    `json:"dataset"`
	// OptimizerRecord is the optimizer by name (left out for SGD) and
	// its hyper-parameters.
	models.OptimizerRecord
	// StragglerDevice's compute ran StragglerFactor times as long as it
	// would have (an injected straggler); the factor is omitted, and 1,
	// for a run without one.
	StragglerDevice int     `json:"straggler_device,omitempty"`
	StragglerFactor float64 `json:"straggler_factor,omitempty"`
}

// Stage is one pipeline stage: the blocks [FirstBlock, EndBlock) of the
// model on device Device (stage s is on device s, except in interleaved,
// where device k holds stages k, k+K, …).
type Stage struct {
	Device     int      `json:"device"`
	FirstBlock int      `json:"first_block"`
	EndBlock   int      `json:"end_block"`
	Blocks     []string `json:"blocks"`
	Params     int64    `json:"params"`
	// MACsPerSample and ActivationBytesPerSample are the stage's forward
	// multiply-accumulates and kept bytes for one sample.
	MACsPerSample            int64 `json:"macs_per_sample"`
	ActivationBytesPerSample int64 `json:"activation_bytes_per_sample"`
}

// Step is one measured step.
type Step struct {
	Step      int     `json:"step"`
	WallNanos int64   `json:"wall_nanos"`
	Loss      float64 `json:"loss"`
}

// Summary aggregates the measured steps.
type Summary struct {
	StepNanosMedian int64 `json:"step_nanos_median"`
	StepNanosMin    int64 `json:"step_nanos_min"`
	StepNanosMax    int64 `json:"step_nanos_max"`
	// SamplesPerSecond is a step's samples (the batch, R·B for R
	// replicas) divided by the median step time.
	SamplesPerSecond float64 `json:"samples_per_second"`
	// BubbleFraction is the devices' mean idle time over the step time.
	BubbleFraction float64 `json:"bubble_fraction"`
	// PeakBytesMax is the largest device's peak bytes (all categories).
	PeakBytesMax int64 `json:"peak_bytes_max"`
	// MovedBytesPerStep is what all devices received per step.
	MovedBytesPerStep int64 `json:"moved_bytes_per_step"`
	// PredictedRelErr is a predicted record's relative 1-σ uncertainty of
	// its step time; measured records leave it out.
	PredictedRelErr float64 `json:"predicted_rel_err,omitempty"`
}

// Device aggregates one device over the measured steps; times are means
// per step.
type Device struct {
	Index int    `json:"index"`
	Name  string `json:"name"`
	Stage int    `json:"stage"` // the device's first stage; the partition lists them all
	// BusyNanosByOp maps an op kind ("forward", "send", …) to the time
	// the device spent in it per step.
	BusyNanosByOp map[string]int64 `json:"busy_nanos_by_op"`
	BusyNanos     int64            `json:"busy_nanos"`
	IdleNanos     int64            `json:"idle_nanos"`
	// PeakBytesByCategory is the largest peak over the steps of each
	// memory category ("weights", "activations", …); PeakBytes the
	// largest total.
	PeakBytesByCategory map[string]int64 `json:"peak_bytes_by_category"`
	PeakBytes           int64            `json:"peak_bytes"`
	// SentBytesPerStep and ReceivedBytesPerStep count transfers between
	// devices.
	SentBytesPerStep     int64 `json:"sent_bytes_per_step"`
	ReceivedBytesPerStep int64 `json:"received_bytes_per_step"`
	// MemoryTrack is the device's live memory over one measured step,
	// change by change (omitted when the run did not track it).
	MemoryTrack *MemoryTrack `json:"memory_track,omitempty"`
}

// BlockTiming is a block's compute time per call, the median over the
// measured steps, with the samples each call processed. A schedule that
// splits its backwards (zb-h1, zb-h2) times their halves,
// BackwardInputNanos and BackwardWeightNanos, and no BackwardNanos.
type BlockTiming struct {
	Block               int    `json:"block"`
	Name                string `json:"name"`
	Stage               int    `json:"stage"`
	Samples             int    `json:"samples"`
	ForwardNanos        int64  `json:"forward_nanos"`
	BackwardNanos       int64  `json:"backward_nanos"`
	RecomputeNanos      int64  `json:"recompute_nanos,omitempty"`
	PredictNanos        int64  `json:"predict_nanos,omitempty"`
	BackwardInputNanos  int64  `json:"backward_input_nanos,omitempty"`
	BackwardWeightNanos int64  `json:"backward_weight_nanos,omitempty"`
}

// Event is one op on one device in one measured step.
type Event struct {
	Step   int    `json:"step"`
	Device int    `json:"device"`
	Stage  int    `json:"stage"`
	Op     string `json:"op"`
	// Micro, Shard and Peer are the op's micro-batch (coop: slice),
	// prediction shard and transfer peer, or −1 where they do not apply.
	Micro int `json:"micro"`
	Shard int `json:"shard"`
	Peer  int `json:"peer"`
	// Block is the block of a per-block event, or −1 for a whole op.
	Block      int   `json:"block"`
	StartNanos int64 `json:"start_nanos"`
	EndNanos   int64 `json:"end_nanos"`
	Bytes      int64 `json:"bytes,omitempty"`
}

// MicroBatchSize returns m = B/M, the samples of one micro-batch (coop:
// of one slice) of the run.
func (c RunConfig) MicroBatchSize() int { return c.Batch / max(c.Micro, 1) }

// ShardSize returns B/K, the samples of one shard of the mini-batch:
// what each device predicts in coop's prediction step.
func (c RunConfig) ShardSize() int { return c.Batch / max(c.Devices, 1) }

// ThreadsLabel names the devices' threads as profile's --threads takes
// them: "2", or one per pipeline device where they differ ("2,1").
func (c RunConfig) ThreadsLabel() string {
	if len(c.DeviceThreads) == 0 {
		return strconv.Itoa(c.Threads)
	}
	return FormatThreads(c.DeviceThreads)
}

// FormatThreads is --threads's form of per-device threads: "2,1".
func FormatThreads(perDevice []int) string {
	s := make([]string, len(perDevice))
	for i, n := range perDevice {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// ThreadsSpec names the job's threads as a note on oversubscription
// does: devices × threads ("4×1"), or replicas × the pipeline's per-
// device threads ("2×(2,1)", "2,1" for one replica).
func (c RunConfig) ThreadsSpec() string {
	if len(c.DeviceThreads) == 0 {
		return fmt.Sprintf("%d×%d", c.JobDevices(), c.Threads)
	}
	if r := max(c.Replicas, 1); r > 1 {
		return fmt.Sprintf("%d×(%s)", r, c.ThreadsLabel())
	}
	return c.ThreadsLabel()
}

// DeviceSlowdown returns how many times as long job device d computes
// as the reference device (a device of the run's threads, at full
// speed): the inverse of its pipeline device's speed (speeds, one per
// pipeline device, repeated by every replica; none: 1), times the
// straggler's factor when d is the straggler.
func DeviceSlowdown(speeds []float64, straggler int, factor float64, d int) float64 {
	f := 1.0
	if len(speeds) > 0 {
		f = 1 / speeds[d%len(speeds)]
	}
	if factor > 1 && straggler == d {
		f *= factor
	}
	return f
}

// Slowdown is DeviceSlowdown of the run's job device d.
func (c RunConfig) Slowdown(d int) float64 {
	return DeviceSlowdown(c.DeviceSpeeds, c.StragglerDevice, c.StragglerFactor, d)
}

// DevicesAlike reports whether the run's devices computed alike: the
// same threads and no straggler. A run whose devices differ measured
// them, not the blocks on one kind of device.
func (c RunConfig) DevicesAlike() bool {
	return c.StragglerFactor <= 1 && len(c.DeviceThreads) == 0
}

// TotalThreads returns the worker threads of all the job's devices.
func (c RunConfig) TotalThreads() int {
	if len(c.DeviceThreads) == 0 {
		return c.JobDevices() * c.Threads
	}
	n := 0
	for _, t := range c.DeviceThreads {
		n += t
	}
	return max(c.Replicas, 1) * n
}

// Bounds returns the partition as block bounds: stage s held the blocks
// [Bounds[s], Bounds[s+1]). It is nil for a record without a partition.
func (r *Record) Bounds() []int {
	if len(r.Partition) == 0 {
		return nil
	}
	out := []int{r.Partition[0].FirstBlock}
	for _, s := range r.Partition {
		out = append(out, s.EndBlock)
	}
	return out
}
