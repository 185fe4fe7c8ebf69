package template

import (
	"fmt"
	"reflect"
	"text/template"
	"time"
)

// A user template (launch.templates, --templates) comes with the spec, and
// parc runs in CI on repositories it does not own: its work is bounded, not
// only its output. Capping the output (MaxOutputBytes) stops a template that
// writes forever, but not one that computes: nested ranges over `until`
// lists that write nothing (10^10 steps, minutes), or a string doubled by
// printf forty times (10 GB before a byte is written).
//
// Every function a template calls counts against MaxWork, one unit per call
// and one per element of a list or byte of a string it returns, and no
// result may be larger than MaxOutputBytes. What neither sees (nested
// ranges over the plan's own lists, which call nothing) stops at
// MaxRenderTime.

// MaxWork is the most work units one template may spend: 10^7. The
// built-in templates spend at most a few thousand (report.md: 4,813 on a
// 14,336-GPU Llama 3 405B plan, 5,650 on the DeepSeek-V3 example).
const MaxWork = 10_000_000

// MaxRenderTime bounds one template's execution: far above any real
// template (milliseconds), and still a bound.
const MaxRenderTime = 30 * time.Second

// renderTime is MaxRenderTime; tests lower it.
var renderTime = MaxRenderTime

// MaxListLen is the longest list (or map) a template function may return:
// 2^20 elements, each one a step of work.
const MaxListLen = 1 << 20

var (
	errTooLong     = fmt.Errorf("a template function returned a list of more than %d elements, the most a template may build", MaxListLen)
	errTooMuchWork = fmt.Errorf("the template does more than %d steps of work, the most a template may", MaxWork)
	errTooSlow     = fmt.Errorf("the template ran for more than %s, the most a template may", MaxRenderTime)
)

// budgeted returns funcs with every function wrapped to count its work
// against one budget, and the builtins that build text (printf, print,
// println) added as such functions.
func budgeted(funcs template.FuncMap) template.FuncMap {
	work := 0
	spend := func(n int) {
		if work += n; work > MaxWork {
			panic(errTooMuchWork) // text/template returns a function's panic as its error
		}
	}
	out := template.FuncMap{
		"printf":  fmt.Sprintf,
		"print":   fmt.Sprint,
		"println": fmt.Sprintln,
	}
	for name, f := range funcs {
		out[name] = f
	}
	for name, f := range out {
		fv := reflect.ValueOf(f)
		out[name] = reflect.MakeFunc(fv.Type(), func(args []reflect.Value) []reflect.Value {
			spend(1)
			var res []reflect.Value
			if fv.Type().IsVariadic() {
				res = fv.CallSlice(args)
			} else {
				res = fv.Call(args)
			}
			if len(res) > 0 {
				v := res[0]
				if v.Kind() == reflect.Interface && !v.IsNil() {
					v = v.Elem() // sprig's list functions return interface{}
				}
				switch v.Kind() {
				case reflect.String:
					if v.Len() > MaxOutputBytes {
						panic(errTooLarge)
					}
					spend(v.Len())
				case reflect.Slice, reflect.Array, reflect.Map:
					if v.Len() > MaxListLen {
						panic(errTooLong)
					}
					spend(v.Len())
				}
			}
			return res
		}).Interface()
	}
	return out
}
