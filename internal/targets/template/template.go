package template

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing/fstest"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"
)

// Ext is the file extension of a template: the template of megatron.args is
// megatron.args.tmpl, in the built-ins and in an override directory.
const Ext = ".tmpl"

// FuncMap returns the functions every template gets: sprig's hermetic text
// functions, and the escaping functions of this package — the one path every
// value takes into a generated file: shq and shqJoin (shell words), sbatchq
// (#SBATCH values), comment (text inside a comment line), md (Markdown
// text in report.md) and mdcode (a Markdown code span).
func FuncMap() template.FuncMap {
	m := sprig.HermeticTxtFuncMap()
	m["shq"] = ShellQuote
	m["shqJoin"] = shqJoin
	m["sbatchq"] = SbatchQuote
	m["repeat"] = boundedRepeat
	m["until"] = boundedUntil
	m["untilStep"] = boundedUntilStep
	seq := m["seq"].(func(...int) string)
	m["seq"] = func(params ...int) (string, error) {
		if len(params) > 0 {
			lo, hi := params[0], params[len(params)-1]
			if len(params) == 1 {
				lo = 1
			}
			if d := float64(hi) - float64(lo); math.Abs(d) > MaxOutputBytes/2 {
				return "", errTooLarge
			}
		}
		return seq(params...), nil
	}
	m["comment"] = Comment
	m["md"] = Markdown
	m["mdcode"] = MarkdownCode
	return m
}

// shqJoin is ShellJoin for templates, where lists may be []any (sprig's list).
func shqJoin(list any) (string, error) {
	switch l := list.(type) {
	case []string:
		return ShellJoin(l), nil
	case []any:
		words := make([]string, len(l))
		for i, w := range l {
			s, ok := w.(string)
			if !ok {
				return "", fmt.Errorf("shqJoin: element %d is a %T, not a string", i, w)
			}
			words[i] = s
		}
		return ShellJoin(words), nil
	}
	return "", fmt.Errorf("shqJoin: %T is not a list of strings", list)
}

// Set renders targets from their built-in templates, or from the user's
// overrides: a file NAME.tmpl in the override directory replaces the
// built-in template of NAME.
type Set struct {
	fsys fs.FS
	dir  string
}

// Builtin is the Set without overrides.
func Builtin() *Set { return &Set{} }

// New returns a Set whose overrides are the *.tmpl files at the top of fsys.
// dir is how error messages name that directory (the path the user gave);
// a nil fsys means no overrides.
func New(fsys fs.FS, dir string) *Set { return &Set{fsys: fsys, dir: dir} }

// MaxTemplateBytes is the largest template file a directory may hold.
const MaxTemplateBytes = 1 << 20

// NewDir returns the Set of the *.tmpl files at the top of the directory
// dir, read at once and confined to it: a file that is a symbolic link
// leading out of dir (or through ..) is refused, as is a template larger
// than MaxTemplateBytes. Links that stay inside dir are followed.
func NewDir(dir string) (*Set, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("template directory %s: %w", dir, err)
	}
	defer root.Close()
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return nil, fmt.Errorf("template directory %s: %w", dir, err)
	}
	files := fstest.MapFS{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, Ext) {
			continue
		}
		f, err := root.Open(name) // follows links only while they stay inside dir
		if err != nil {
			if target, lerr := os.Readlink(filepath.Join(dir, name)); lerr == nil {
				return nil, fmt.Errorf("template %s is a symbolic link to %s, outside the template directory: refused (%v)",
					filepath.Join(dir, name), target, err)
			}
			return nil, fmt.Errorf("template %s: %w", filepath.Join(dir, name), err)
		}
		st, err := f.Stat()
		if err == nil && st.IsDir() {
			f.Close()
			continue
		}
		b, err := io.ReadAll(io.LimitReader(f, MaxTemplateBytes+1))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("template %s: %w", filepath.Join(dir, name), err)
		}
		if len(b) > MaxTemplateBytes {
			return nil, fmt.Errorf("template %s is larger than %d MiB", filepath.Join(dir, name), MaxTemplateBytes>>20)
		}
		files[name] = &fstest.MapFile{Data: b, Mode: 0o644}
	}
	return New(files, dir), nil
}

// Overrides lists the names of the targets the override directory replaces
// (file names without .tmpl), sorted.
func (s *Set) Overrides() ([]string, error) {
	if s == nil || s.fsys == nil {
		return nil, nil
	}
	entries, err := fs.ReadDir(s.fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("template directory %s: %w", s.dir, err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), Ext) {
			names = append(names, strings.TrimSuffix(e.Name(), Ext))
		}
	}
	slices.Sort(names)
	return names, nil
}

// CheckOverrides reports override files that replace none of the known
// targets (a misspelt name would otherwise be ignored in silence).
func (s *Set) CheckOverrides(known ...string) error {
	names, err := s.Overrides()
	if err != nil {
		return err
	}
	var unknown []string
	for _, n := range names {
		if !slices.Contains(known, n) {
			unknown = append(unknown, path.Join(s.dir, n+Ext))
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	want := make([]string, len(known))
	for i, k := range known {
		want[i] = k + Ext
	}
	slices.Sort(want)
	return fmt.Errorf("template directory %s: %s replace(s) no target; the templates are %s",
		s.dir, strings.Join(unknown, ", "), strings.Join(want, ", "))
}

// Render executes the template of the target name (e.g. "submit.sbatch") on
// data: the override when the directory has one, else builtin. Errors are
// *Error values.
func (s *Set) Render(name, builtin string, data any) ([]byte, error) {
	file := "builtin/" + name + Ext
	text := builtin
	if s != nil && s.fsys != nil {
		b, err := fs.ReadFile(s.fsys, name+Ext)
		switch {
		case err == nil:
			file = path.Join(s.dir, name+Ext)
			text = string(b)
		case !errors.Is(err, fs.ErrNotExist):
			return nil, &Error{File: path.Join(s.dir, name+Ext), Err: err}
		}
	}
	return Execute(file, text, data)
}

// MaxOutputBytes is the most a template may render: 16 MiB, far above any
// generated file (a user template looping without end stops there).
const MaxOutputBytes = 16 << 20

// errTooLarge stops a template that renders more than MaxOutputBytes.
var errTooLarge = fmt.Errorf("the rendered output exceeds %d MiB, the most a template may write", MaxOutputBytes>>20)

// capped is a buffer that refuses to grow past MaxOutputBytes.
type capped struct{ bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if c.Len()+len(p) > MaxOutputBytes {
		return 0, errTooLarge
	}
	return c.Buffer.Write(p)
}

// Execute parses text as the template named file and executes it on data.
// The output is capped at MaxOutputBytes.
//
// Its work is bounded too (budget.go): MaxWork steps of the functions it
// calls, and MaxRenderTime. A template stopped by the time limit is left
// running in the background until the process ends: text/template cannot be
// interrupted (parc compile exits right after reporting it).
func Execute(file, text string, data any) ([]byte, error) {
	t, err := template.New(file).Option("missingkey=error").Funcs(budgeted(FuncMap())).Parse(text)
	if err != nil {
		return nil, wrap(file, err)
	}
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		var b capped
		err := t.Execute(&b, data)
		done <- result{b.Bytes(), err}
	}()
	timer := time.NewTimer(renderTime)
	defer timer.Stop()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, wrap(file, r.err)
		}
		return r.out, nil
	case <-timer.C:
		return nil, wrap(file, errTooSlow)
	}
}

// boundedRepeat is sprig's repeat, refusing results beyond MaxOutputBytes
// (strings.Repeat would allocate them before anything is written).
func boundedRepeat(count int, s string) (string, error) {
	if count < 0 || len(s) > 0 && count > MaxOutputBytes/len(s) {
		return "", errTooLarge
	}
	return strings.Repeat(s, count), nil
}

// boundedUntil is sprig's until, refusing lists longer than MaxOutputBytes.
func boundedUntil(count int) ([]int, error) {
	step := 1
	if count < 0 {
		step = -1
	}
	if count > MaxOutputBytes || count < -MaxOutputBytes {
		return nil, errTooLarge
	}
	out := make([]int, 0, count*step)
	for i := 0; i != count; i += step {
		out = append(out, i)
	}
	return out, nil
}

// boundedUntilStep is sprig's untilStep with the same bound.
func boundedUntilStep(start, stop, step int) ([]int, error) {
	if step == 0 || (float64(stop)-float64(start))/float64(step) < 0 {
		return []int{}, nil
	}
	if math.Abs((float64(stop)-float64(start))/float64(step)) > MaxOutputBytes {
		return nil, errTooLarge
	}
	var out []int
	for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
		out = append(out, i)
	}
	return out, nil
}

// Error is a template that failed to parse or execute, with the position in
// the template file when text/template gave one.
type Error struct {
	File   string
	Line   int // 0 = unknown
	Column int // 0 = unknown
	// Msg is text/template's message without its "template: FILE:LINE:COL: " prefix.
	Msg string
	Err error
}

func (e *Error) Error() string {
	pos := e.File
	if e.Line > 0 {
		pos += ":" + strconv.Itoa(e.Line)
		if e.Column > 0 {
			pos += ":" + strconv.Itoa(e.Column)
		}
	}
	return pos + ": " + e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// wrap turns an error of text/template for the template named file into an
// *Error, taking the line and column out of "template: FILE:LINE[:COL]: ".
func wrap(file string, err error) error {
	e := &Error{File: file, Err: err, Msg: err.Error()}
	rest, ok := strings.CutPrefix(e.Msg, "template: "+file+":")
	if !ok {
		e.Msg = strings.TrimPrefix(e.Msg, "template: "+file+": ")
		return e
	}
	for i, n := range []*int{&e.Line, &e.Column} {
		j := 0
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		if j == 0 || j == len(rest) || rest[j] != ':' {
			if i == 0 {
				return e
			}
			break
		}
		*n, _ = strconv.Atoi(rest[:j])
		rest = rest[j+1:]
	}
	e.Msg = strings.TrimPrefix(rest, " ")
	return e
}
