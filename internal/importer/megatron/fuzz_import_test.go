package megatron

import "testing"

// FuzzImport: no input makes the importer panic, and a spec it writes for
// arguments Megatron's parser accepts always loads (parc's checks may still
// refuse it).
func FuzzImport(f *testing.F) {
	f.Add("--num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 64 --max-position-embeddings 64 --micro-batch-size 1 --global-batch-size 8 --train-iters 5")
	f.Add("--num-layers 0 --hidden-size 64 --num-attention-heads 0 --tensor-model-parallel-size 0 --moe-layer-freq 0 --num-experts 4")
	f.Add("X=(--num-layers 4)\npython pretrain_gpt.py ${X[@]} --num-layers-per-virtual-pipeline-stage 0 --pipeline-model-parallel-size -2")
	f.Add(recipeYAML)
	f.Add("ARGS:\n  num_layers: &a [1, 2]\n  hidden_size: *a\n  x: {y: z}\nENV_VARS: [1]\n")
	f.Fuzz(func(t *testing.T, src string) {
		res := Import([]byte(src), Options{File: "in.sh", Nodes: 1})
		if res.Spec != nil && res.Compiled == nil {
			for _, d := range res.Diags {
				if d.Code == "syntax" {
					t.Fatalf("the spec does not parse: %v\n%s", d, res.Spec)
				}
			}
		}
	})
}
