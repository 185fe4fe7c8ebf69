package compiler

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// relativePaths reports paths that will resolve somewhere the user may not
// expect. The rule (README, "Working directory"): a job resolves every
// relative path against its working directory, launch.workdir when set
// (submit.sbatch and torchrun.sh cd there before starting the workers), else
// the container's workdir when it runs in one (srun starts the workers
// there), else the directory sbatch was run in (or its --chdir); parc
// rewrites no path.
// Slurm opens cluster.slurm.output/error before the script runs, relative to
// the submission directory, and creates no directory for them.
func relativePaths(s *spec.Spec, at diag.Locator) diag.List {
	r := diag.NewReporter(at)
	type field struct{ path, v string }
	var rel []field
	add := func(path string, v *string) {
		// "$DATA/x" and "~/x" are relative too: the scripts quote every
		// value and Megatron opens paths as written, so neither is expanded.
		if v != nil && *v != "" && !filepath.IsAbs(*v) {
			rel = append(rel, field{path, *v})
		}
	}
	add("launch.program", &s.Launch.Program)
	for i := range s.Data.Paths {
		if _, err := strconv.ParseFloat(s.Data.Paths[i], 64); err != nil { // not a blend weight
			add("data.paths", &s.Data.Paths[i])
		}
	}
	add("data.cache_path", s.Data.CachePath)
	add("data.tokenizer.model", s.Data.Tokenizer.Model)
	add("data.tokenizer.vocab_file", s.Data.Tokenizer.VocabFile)
	add("data.tokenizer.merge_file", s.Data.Tokenizer.MergeFile)
	if ck := s.Checkpoint; ck != nil {
		add("checkpoint.save", ck.Save)
		add("checkpoint.load", ck.Load)
	}
	add("logging.tensorboard_dir", s.Logging.TensorboardDir)
	// The working directory: launch.workdir, else the container's, where
	// srun starts the workers (--container-workdir).
	wd, wdPath := s.Launch.Workdir, "launch.workdir"
	if ct := s.Launch.Container; wd == nil && ct != nil && ct.Workdir != nil {
		wd, wdPath = ct.Workdir, "launch.container.workdir"
	}
	if wd != nil && filepath.IsAbs(*wd) {
		// Relative paths resolve against an absolute workdir as intended,
		// except those that look like they expand and do not.
		for _, f := range rel {
			if unexpanded(f.v) != "" {
				r.Warnf(f.path, "relative-path", "write the path out (an absolute path, or one relative to "+wdPath+")",
					"%s %q is relative%s: it resolves to %s", f.path, f.v, unexpanded(f.v), filepath.Join(*wd, f.v))
			}
		}
	}
	switch {
	case wd != nil && !filepath.IsAbs(*wd):
		r.Warnf(wdPath, "relative-path", "give an absolute directory, e.g. the Megatron-LM checkout on the cluster",
			"%s %q is relative%s: the job resolves it against the directory sbatch is run in (or --chdir), and every relative path of the spec against that", wdPath, *wd, unexpanded(*wd))
	case wd == nil && len(rel) > 0:
		names := make([]string, 0, len(rel))
		for _, f := range rel {
			names = append(names, fmt.Sprintf("%s %q%s", f.path, f.v, unexpanded(f.v)))
		}
		if len(names) > 4 {
			names = append(names[:4], fmt.Sprintf("and %d more", len(rel)-4))
		}
		r.Warnf(rel[0].path, "relative-path", `set launch.workdir to an absolute directory (the Megatron-LM checkout that holds pretrain_gpt.py), or make the paths absolute`,
			"without launch.workdir the job resolves relative paths against the directory sbatch is run in (or --chdir), not the output directory: %s", strings.Join(names, ", "))
	}
	if sl := s.Cluster.Slurm; sl != nil {
		for _, f := range []struct {
			path string
			v    *string
		}{{"cluster.slurm.output", sl.Output}, {"cluster.slurm.error", sl.Error}} {
			if f.v == nil {
				continue
			}
			if dir := filepath.Dir(*f.v); dir != "." && dir != "/" {
				r.Warnf(f.path, "slurm-output-dir", fmt.Sprintf("create %s before sbatch (mkdir -p %s), or write the file into an existing directory", dir, dir),
					"Slurm opens %s %q before the script runs and does not create its directory %q: the job fails to start when it is missing%s",
					f.path, *f.v, dir, map[bool]string{true: "", false: " (relative to the directory sbatch is run in, or --chdir)"}[filepath.IsAbs(*f.v)])
			}
		}
	}
	return r.List
}

// unexpanded says why a path that starts with $ or ~ is relative.
func unexpanded(v string) string {
	if strings.HasPrefix(v, "$") || strings.HasPrefix(v, "~") {
		return " (parc quotes every value, so " + v[:1] + " is not expanded)"
	}
	return ""
}
