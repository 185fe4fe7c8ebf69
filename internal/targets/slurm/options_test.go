package slurm

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"parc.dev/parc/internal/spec"
)

// TestStringOptionsCoverSlurm: every string field of cluster.slurm has its
// #SBATCH option in StringOptions, the one table submit.sbatch writes them
// with and parc import reads them back by, and each entry reads its own
// field.
func TestStringOptionsCoverSlurm(t *testing.T) {
	typ := reflect.TypeOf(spec.Slurm{})
	var want []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Type == reflect.TypeOf((*string)(nil)) {
			want = append(want, strings.Split(f.Tag.Get("json"), ",")[0])
		}
	}
	var got []string
	for _, o := range StringOptions {
		got = append(got, o.Field)
		sl := spec.Slurm{}
		v := reflect.ValueOf(&sl).Elem()
		for i := range typ.NumField() {
			if strings.Split(typ.Field(i).Tag.Get("json"), ",")[0] == o.Field {
				s := "x"
				v.Field(i).Set(reflect.ValueOf(&s))
			}
		}
		if assert.NotNil(t, o.get(&sl), o.Option) {
			assert.Equal(t, "x", *o.get(&sl), "%s reads %s", o.Option, o.Field)
		}
		assert.Equal(t, o.Field, StringField(o.Option))
	}
	assert.ElementsMatch(t, want, got)
}
