package spec

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestLookupGPU: the names users and tools write for a GPU (nvidia-smi's
// "NVIDIA H100 80GB HBM3", a preset's "H100-SXM5-80GB", a short "H100") find
// its datasheet; a product name inside another ("b200" in "gb200", "h200" in
// "gh200") does not; the variant words and the memory pick the variant.
func TestLookupGPU(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mem   float64
		model string // "" = not found
	}{
		{"H100", 80, "H100 SXM"},
		{"NVIDIA H100 80GB HBM3", 80, "H100 SXM"},
		{"H100-SXM5-80GB", 80, "H100 SXM"},
		{"h100_sxm", 80, "H100 SXM"},
		{"NVIDIA H100 PCIe", 80, "H100 PCIe"},
		{"H100 NVL", 94, "H100 NVL"},
		{"H800-SXM5-80GB", 80, "H800 SXM"},
		{"H200-SXM-141GB", 141, "H200 SXM"},
		{"NVIDIA H200 NVL", 141, "H200 NVL"},
		{"GH200", 96, "GH200 96GB"},
		{"NVIDIA GH200 144G HBM3e", 144, "GH200 144GB"},
		{"A100-SXM4-80GB", 80, "A100 SXM 80GB"},
		{"NVIDIA A100-SXM4-40GB", 40, "A100 SXM 40GB"},
		{"NVIDIA A100 80GB PCIe", 80, "A100 PCIe 80GB"},
		{"A100-PCIE-40GB", 40, "A100 PCIe 40GB"},
		{"B200", 180, "B200"},
		{"NVIDIA B200", 180, "B200"},
		{"GB200-186GB", 186, "GB200"},
		{"nvidia-gb200-nvl72", 186, "GB200"},
		{"B300-270GB", 270, "B300"},
		{"GB300", 279, "GB300"},
		{"g", 16, ""},
		{"RTX 4090", 24, ""},
		{"b2000", 180, ""},
		{"MI300X", 192, ""},
		{"", 80, ""},
	} {
		d, ok := LookupGPU(tc.name, tc.mem)
		assert.Equal(t, tc.model != "", ok, tc.name)
		assert.Equal(t, tc.model, d.Model, tc.name)
	}
}

// TestFillFromDatasheet: a GPU named and given with its datasheet's bf16 peak
// takes the figures it leaves out; what it writes stays; a bf16 peak that is
// not the datasheet's (H100's sparse 1,979) takes only the compute capability;
// an unknown GPU gets Hopper's; GB200 racks share NVLink across 72 GPUs.
func TestFillFromDatasheet(t *testing.T) {
	c := Cluster{GPUsPerNode: 8, GPU: GPU{Name: "H100", MemoryGiB: 80, BF16TFLOPs: 989, HBMGBps: 3000}}
	c.FillFromDatasheet()
	assert.Equal(t, GPU{Name: "H100", MemoryGiB: 80, BF16TFLOPs: 989, FP8TFLOPs: 1979, HBMGBps: 3000, SMCount: 132,
		TDPWatts: 700, ComputeCapability: 9.0}, c.GPU)
	assert.Equal(t, 8, c.NVLinkDomain)

	c = Cluster{GPUsPerNode: 8, GPU: GPU{Name: "A100", MemoryGiB: 80, BF16TFLOPs: 624}}
	c.FillFromDatasheet()
	assert.Equal(t, GPU{Name: "A100", MemoryGiB: 80, BF16TFLOPs: 624, ComputeCapability: 8.0}, c.GPU)

	c = Cluster{GPUsPerNode: 4, GPU: GPU{Name: "my accelerator", MemoryGiB: 16, BF16TFLOPs: 100}}
	c.FillFromDatasheet()
	assert.Equal(t, GPU{Name: "my accelerator", MemoryGiB: 16, BF16TFLOPs: 100, ComputeCapability: 9.0}, c.GPU)
	assert.Equal(t, 4, c.NVLinkDomain)

	c = Cluster{GPUsPerNode: 4, GPU: GPU{Name: "GB200", MemoryGiB: 186, BF16TFLOPs: 2500, ComputeCapability: 10.0}}
	c.FillFromDatasheet()
	assert.Equal(t, 72, c.NVLinkDomain)
	assert.Equal(t, 1200.0, c.GPU.TDPWatts)
	c = Cluster{GPUsPerNode: 16, GPU: GPU{Name: "GB200", MemoryGiB: 186, BF16TFLOPs: 2500}}
	c.FillFromDatasheet()
	assert.Equal(t, 16, c.NVLinkDomain, "72 GPUs are not whole nodes of 16")
	c = Cluster{GPUsPerNode: 4, NVLinkDomain: 36, GPU: GPU{Name: "GB200", MemoryGiB: 186, BF16TFLOPs: 2500}}
	c.FillFromDatasheet()
	assert.Equal(t, 36, c.NVLinkDomain, "a domain the spec writes stays")
}
