package load

import (
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fillDefaults fills every field in one batch where that gives what filling
// them one at a time gives, and falls back to one at a time where it does
// not: here the plan computes b from a, so once a takes the preset's 3, b is
// 6 and the preset's default 5 for b must not be filled (the batch, which
// sees b open beside an open a, fills it and conflicts).
func TestFillDefaultsBatchAndWalk(t *testing.T) {
	ctx := cuecontext.New()
	value := func(src string) cue.Value {
		v := ctx.CompileString(src)
		require.NoError(t, v.Err())
		return v
	}
	fill := func(user, plan string) map[string]int64 {
		u := fillDefaults(value(user), value(plan), []cue.Path{cue.MakePath()})
		p := u.Unify(value(plan))
		require.NoError(t, p.Validate(cue.Concrete(true)))
		out := map[string]int64{}
		for _, f := range []string{"a", "b"} {
			n, err := p.LookupPath(cue.ParsePath(f)).Int64()
			require.NoError(t, err)
			out[f] = n
		}
		return out
	}
	// Two disagreeing defaults each: both take the preset's (the batch).
	assert.Equal(t, map[string]int64{"a": 3, "b": 4}, fill(`{a: *3 | _, b: *4 | _}`, `{a: *1 | int, b: *2 | int}`))
	// b computed from a: the walk, b from the filled a.
	assert.Equal(t, map[string]int64{"a": 3, "b": 6}, fill(`{a: *3 | _, b: *5 | _}`, `{a: *1 | int, b: a * 2}`))
}
