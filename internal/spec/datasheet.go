package spec

import (
	"math"
	"strings"
	"unicode"
)

// Datasheet is what NVIDIA's datasheet of one GPU model gives: the figures a
// spec's cluster.gpu may leave out when its name says which GPU it is.
// Peaks are dense (no sparsity), TFLOP/s; zero means the datasheet gives none
// (no fp8 tensor cores on A100) or parc derives it (exponential rate before
// Blackwell, from the compute capability).
type Datasheet struct {
	Model     string  // "H100 SXM"
	Source    string  // the datasheet or whitepaper the figures come from
	MemoryGiB float64 // HBM capacity
	BF16, FP8 float64
	FP4       float64
	HBMGBps   float64
	SMs       int
	ExpTOPS   float64
	TDPWatts  float64
	CC        float64 // compute capability
	// NVLinkDomain is the GPUs of the system that share one NVLink domain
	// when the GPU is sold only in one (72 in a GB200/GB300 NVL72 rack), 0
	// when it follows the node.
	NVLinkDomain int

	product, variant string  // name tokens that select it ("h100", "pcie")
	maxMemoryGiB     float64 // chosen only when memory_gib is at most this (0: any)
}

// datasheets are the GPUs parc knows by name. A product with variants lists
// the default (SXM) variant last; a memory bound picks between capacities.
var datasheets = []Datasheet{
	{Model: "A100 SXM 40GB", product: "a100", maxMemoryGiB: 48, MemoryGiB: 40, BF16: 312, HBMGBps: 1555, SMs: 108, TDPWatts: 400, CC: 8.0,
		Source: "NVIDIA A100 Tensor Core GPU datasheet (A100 40GB SXM: 1,555 GB/s, 400 W; BF16 312 TFLOPS dense); A100 architecture whitepaper: 108 SMs"},
	{Model: "A100 PCIe 40GB", product: "a100", variant: "pcie", maxMemoryGiB: 48, MemoryGiB: 40, BF16: 312, HBMGBps: 1555, SMs: 108, TDPWatts: 250, CC: 8.0,
		Source: "NVIDIA A100 Tensor Core GPU datasheet (A100 40GB PCIe: 1,555 GB/s, 250 W)"},
	{Model: "A100 PCIe 80GB", product: "a100", variant: "pcie", MemoryGiB: 80, BF16: 312, HBMGBps: 1935, SMs: 108, TDPWatts: 300, CC: 8.0,
		Source: "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB PCIe: 1,935 GB/s, 300 W)"},
	{Model: "A100 SXM 80GB", product: "a100", MemoryGiB: 80, BF16: 312, HBMGBps: 2039, SMs: 108, TDPWatts: 400, CC: 8.0,
		Source: "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM: 2,039 GB/s HBM2e, 400 W; BF16 312 TFLOPS dense, 624 with sparsity); A100 architecture whitepaper: 108 SMs"},
	{Model: "H100 PCIe", product: "h100", variant: "pcie", MemoryGiB: 80, BF16: 756, FP8: 1513, HBMGBps: 2000, SMs: 114, TDPWatts: 350, CC: 9.0,
		Source: "NVIDIA H100 Tensor Core GPU datasheet (H100 PCIe: BF16 1,513 and FP8 3,026 TFLOPS with sparsity, 2 TB/s, 300-350 W); H100 architecture whitepaper: 114 SMs"},
	{Model: "H100 NVL", product: "h100", variant: "nvl", MemoryGiB: 94, BF16: 835, FP8: 1671, HBMGBps: 3900, SMs: 132, TDPWatts: 400, CC: 9.0,
		Source: "NVIDIA H100 Tensor Core GPU datasheet (H100 NVL: BF16 1,671 and FP8 3,341 TFLOPS with sparsity, 94 GB, 3.9 TB/s, 350-400 W)"},
	{Model: "H100 SXM", product: "h100", MemoryGiB: 80, BF16: 989, FP8: 1979, HBMGBps: 3350, SMs: 132, TDPWatts: 700, CC: 9.0,
		Source: "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM: BF16 1,979 and FP8 3,958 TFLOPS with sparsity, 3.35 TB/s HBM3, up to 700 W); H100 architecture whitepaper: 132 SMs (SXM5)"},
	{Model: "H800 SXM", product: "h800", MemoryGiB: 80, BF16: 989, FP8: 1979, HBMGBps: 3350, SMs: 132, TDPWatts: 700, CC: 9.0,
		Source: "NVIDIA H800 Tensor Core GPU datasheet (H800 SXM: the H100 SXM's compute and 3.35 TB/s HBM3, NVLink 400 GB/s)"},
	{Model: "H200 NVL", product: "h200", variant: "nvl", MemoryGiB: 141, BF16: 835, FP8: 1671, HBMGBps: 4800, SMs: 132, TDPWatts: 600, CC: 9.0,
		Source: "NVIDIA H200 Tensor Core GPU datasheet (H200 NVL: BF16 1,671 and FP8 3,341 TFLOPS with sparsity, 4.8 TB/s, up to 600 W)"},
	{Model: "H200 SXM", product: "h200", MemoryGiB: 141, BF16: 989, FP8: 1979, HBMGBps: 4800, SMs: 132, TDPWatts: 700, CC: 9.0,
		Source: "NVIDIA H200 Tensor Core GPU datasheet (H200 SXM: 141 GB HBM3e at 4.8 TB/s, BF16 1,979 and FP8 3,958 TFLOPS with sparsity, up to 700 W)"},
	{Model: "GH200 96GB", product: "gh200", maxMemoryGiB: 120, MemoryGiB: 96, BF16: 989, FP8: 1979, HBMGBps: 4000, SMs: 132, CC: 9.0,
		Source: "NVIDIA GH200 Grace Hopper Superchip datasheet (96 GB HBM3 at 4 TB/s; the H100's BF16 1,979 and FP8 3,958 TFLOPS with sparsity; module power 450-1,000 W shared with the CPU)"},
	{Model: "GH200 144GB", product: "gh200", MemoryGiB: 144, BF16: 989, FP8: 1979, HBMGBps: 4900, SMs: 132, CC: 9.0,
		Source: "NVIDIA GH200 Grace Hopper Superchip datasheet (144 GB HBM3e at 4.9 TB/s)"},
	{Model: "B200", product: "b200", MemoryGiB: 180, BF16: 2250, FP8: 4500, FP4: 9000, HBMGBps: 8000, SMs: 148, ExpTOPS: 5, TDPWatts: 1000, CC: 10.0,
		Source: "NVIDIA HGX B200 datasheet (FP16/BF16 4.5, FP8 9 and FP4 18 PFLOPS per GPU with sparsity; up to 1,000 W); DGX B200 datasheet (1,440 GB and 64 TB/s HBM3e for 8 GPUs); NVIDIA Technical Blog \"Inside NVIDIA Blackwell Ultra\" (2025) table, as reproduced in https://verda.com/blog/gb300-nvl72-architecture: Blackwell 5 tera-exponentials/s"},
	{Model: "GB200", product: "gb200", MemoryGiB: 186, BF16: 2500, FP8: 5000, FP4: 10000, HBMGBps: 8000, SMs: 148, ExpTOPS: 5, TDPWatts: 1200, CC: 10.0, NVLinkDomain: 72,
		Source: "NVIDIA GB200 NVL72 datasheet (per rack of 72 GPUs, with sparsity: FP16/BF16 360, FP8 720, FP4 1,440 PFLOPS; 13.4 TB HBM3e at 576 TB/s; one NVLink domain); NVIDIA Technical Blog \"Inside NVIDIA Blackwell Ultra\" (2025) table, as reproduced in https://verda.com/blog/gb300-nvl72-architecture: max TDP 1,200 W, 5 tera-exponentials/s"},
	{Model: "B300", product: "b300", MemoryGiB: 270, BF16: 2250, FP8: 4500, FP4: 14000, HBMGBps: 8000, SMs: 160, ExpTOPS: 10.7, TDPWatts: 1100, CC: 10.3,
		Source: "NVIDIA DGX B300 datasheet (270 GB HBM3e per GPU; 72 PFLOPS FP8 and 144 PFLOPS FP4 per 8 GPUs with sparsity); HGX B300 datasheet (FP16/BF16 2.25 PFLOPS dense, up to 1,100 W; FP4 144 | 108 PFLOPS sparse | dense per 8 GPUs, its per-GPU row 14 PFLOPS dense, which parc takes); NVIDIA Technical Blog \"Inside NVIDIA Blackwell Ultra\" (2025) table, as reproduced in https://verda.com/blog/gb300-nvl72-architecture: 160 SMs, 10.7 tera-exponentials/s"},
	{Model: "GB300", product: "gb300", MemoryGiB: 279, BF16: 2500, FP8: 5000, FP4: 15000, HBMGBps: 8000, SMs: 160, ExpTOPS: 10.7, TDPWatts: 1400, CC: 10.3, NVLinkDomain: 72,
		Source: "NVIDIA GB300 NVL72 datasheet (per rack of 72 GPUs, dense: FP16/BF16 180, FP8/FP6 360, FP4 1,080 PFLOPS; 279 GB usable HBM3e per GPU, 576 TB/s per rack; one NVLink domain); NVIDIA Technical Blog \"Inside NVIDIA Blackwell Ultra\" (2025) table, as reproduced in https://verda.com/blog/gb300-nvl72-architecture: max TDP 1,400 W, 160 SMs, 10.7 tera-exponentials/s"},
}

// LookupGPU is the datasheet of the GPU a cluster.gpu.name names, case and
// punctuation aside ("H100", "NVIDIA H100 80GB HBM3", "H100-SXM5-80GB",
// "nvidia-gb200"), or false. A name word must start with the product
// ("gb200" is not "b200"); "pcie" or "nvl" in the name picks that variant,
// else the SXM one; memoryGiB picks between capacities (A100 40 or 80 GB).
func LookupGPU(name string, memoryGiB float64) (Datasheet, bool) {
	words := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	variant := ""
	for _, w := range words {
		switch {
		case strings.Contains(w, "pcie"):
			variant = "pcie"
		case w == "nvl":
			variant = "nvl"
		}
	}
	names := func(product string) bool {
		for _, w := range words {
			if rest, ok := strings.CutPrefix(w, product); ok && (rest == "" || !unicode.IsDigit(rune(rest[0]))) {
				return true
			}
		}
		return false
	}
	var found *Datasheet
	for i := range datasheets {
		d := &datasheets[i]
		if !names(d.product) || d.maxMemoryGiB > 0 && memoryGiB > d.maxMemoryGiB {
			continue
		}
		if d.variant == variant {
			return *d, true
		}
		if d.variant == "" && found == nil {
			found = d
		}
	}
	if found == nil {
		return Datasheet{}, false
	}
	return *found, true
}

// Product is the GPU's product without its variant ("H100" for the H100
// SXM, PCIe and NVL).
func (d Datasheet) Product() string { return strings.ToUpper(d.product) }

// Describes reports whether a GPU given with this dense bf16 peak is this
// datasheet's GPU: the peak within 10% of the datasheet's. A different one
// (most often the "with sparsity" figure, twice the dense one) means the
// name does not describe the figures, and none of the others are taken.
func (d Datasheet) Describes(bf16TFLOPs float64) bool {
	return math.Abs(bf16TFLOPs/d.BF16-1) <= 0.1
}

// defaultComputeCapability is the GPU's compute capability when neither the
// spec nor a datasheet gives it: Hopper's.
const defaultComputeCapability = 9.0

// FillFromDatasheet gives what the spec leaves out (zero) of c.GPU from the
// datasheet of the GPU its name names (LookupGPU): the compute capability
// (else Hopper's), and the other figures when the datasheet Describes the
// spec's bf16 peak (else the estimate derives them from that peak). An NVLink domain left out is the
// datasheet's (NVL72) when the node divides it, else the node.
func (c *Cluster) FillFromDatasheet() {
	g := &c.GPU
	d, ok := LookupGPU(g.Name, g.MemoryGiB)
	fill := func(v *float64, w float64) {
		if *v == 0 {
			*v = w
		}
	}
	if ok {
		fill(&g.ComputeCapability, d.CC)
	}
	if ok && d.Describes(g.BF16TFLOPs) {
		fill(&g.FP8TFLOPs, d.FP8)
		fill(&g.FP4TFLOPs, d.FP4)
		fill(&g.HBMGBps, d.HBMGBps)
		fill(&g.ExpTOPS, d.ExpTOPS)
		fill(&g.TDPWatts, d.TDPWatts)
		if g.SMCount == 0 {
			g.SMCount = d.SMs
		}
		if c.NVLinkDomain == 0 && d.NVLinkDomain > 0 && c.GPUsPerNode > 0 && d.NVLinkDomain%c.GPUsPerNode == 0 {
			c.NVLinkDomain = d.NVLinkDomain
		}
	}
	if g.ComputeCapability == 0 {
		g.ComputeCapability = defaultComputeCapability
	}
	if c.NVLinkDomain == 0 {
		c.NVLinkDomain = c.GPUsPerNode
	}
}
