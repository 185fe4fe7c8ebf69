package slurm

import "parc.dev/parc/internal/spec"

// StringOption is an #SBATCH option whose value is a cluster.slurm string
// field, written as given.
type StringOption struct {
	Option string // the sbatch option ("--partition")
	Field  string // its cluster.slurm field ("partition")
	get    func(*spec.Slurm) *string
}

// StringOptions are cluster.slurm's string fields with the #SBATCH options
// submit.sbatch writes them as (the job name from its default when the
// field is unset), which parc import reads back from a batch script.
var StringOptions = []StringOption{
	{"--job-name", "job_name", func(s *spec.Slurm) *string { return s.JobName }},
	{"--partition", "partition", func(s *spec.Slurm) *string { return s.Partition }},
	{"--account", "account", func(s *spec.Slurm) *string { return s.Account }},
	{"--qos", "qos", func(s *spec.Slurm) *string { return s.QOS }},
	{"--time", "time", func(s *spec.Slurm) *string { return s.Time }},
	{"--constraint", "constraint", func(s *spec.Slurm) *string { return s.Constraint }},
	{"--reservation", "reservation", func(s *spec.Slurm) *string { return s.Reservation }},
	{"--mem", "mem", func(s *spec.Slurm) *string { return s.Mem }},
	{"--output", "output", func(s *spec.Slurm) *string { return s.Output }},
	{"--error", "error", func(s *spec.Slurm) *string { return s.Error }},
	{"--dependency", "dependency", func(s *spec.Slurm) *string { return s.Dependency }},
}

// StringField is the cluster.slurm string field an #SBATCH option writes
// ("--partition": "partition"), "" when it writes none.
func StringField(option string) string {
	for _, o := range StringOptions {
		if o.Option == option {
			return o.Field
		}
	}
	return ""
}

// stringValue is the value of the cluster.slurm field option writes, nil
// when it is unset.
func stringValue(sl *spec.Slurm, option string) *string {
	for _, o := range StringOptions {
		if o.Option == option {
			return o.get(sl)
		}
	}
	panic("slurm: no string field for " + option)
}
