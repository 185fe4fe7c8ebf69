package cli

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The power-loss model. A crash that stops the process (SIGKILL,
// TestWriteFilesCrashAtEveryStep) keeps everything the kernel was told; a
// power loss keeps only what was made durable. This model is the
// pessimistic POSIX one the crash-consistency literature checks against
// (Pillai et al., "All File Systems Are Not Created Equal", OSDI 2014): a
// file's bytes survive once the file is fsynced, a directory's entries
// (creations, renames, links, removals in it) once the directory is
// fsynced, and nothing else. writeFiles reports every change and every
// fsync through fsTrace; the test replays the trace, and at every point of
// it builds the tree a power loss there would leave, on a real disk, runs
// the real recovery (recoverOut, what the next parc compile does first),
// and requires the output directory to hold the whole previous set or the
// whole new one, with the user's own files.

type pnode struct {
	dir  bool
	ents map[string]int
	data []byte
}

type fsModel struct {
	root    string // the real directory the model starts from
	nodes   map[int]*pnode
	durEnts map[int]map[string]int // a directory's entries as of its last fsync
	durData map[int][]byte         // a file's bytes as of its last fsync
	next    int
}

// newModel reads the tree under root as it is, all of it durable (the
// previous set was written and the disk settled before this write).
func newModel(t *testing.T, root string) *fsModel {
	m := &fsModel{root: root, nodes: map[int]*pnode{}, durEnts: map[int]map[string]int{}, durData: map[int][]byte{}}
	var read func(path string) int
	read = func(path string) int {
		st, err := os.Lstat(path)
		require.NoError(t, err)
		id := m.add(&pnode{dir: st.IsDir(), ents: map[string]int{}})
		if st.IsDir() {
			entries, err := os.ReadDir(path)
			require.NoError(t, err)
			for _, e := range entries {
				m.nodes[id].ents[e.Name()] = read(filepath.Join(path, e.Name()))
			}
			m.durEnts[id] = maps.Clone(m.nodes[id].ents)
		} else {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			m.nodes[id].data = b
			m.durData[id] = b
		}
		return id
	}
	read(root)
	return m
}

func (m *fsModel) add(n *pnode) int { m.next++; m.nodes[m.next] = n; return m.next }

// lookup finds the directory holding path and path's last element.
func (m *fsModel) lookup(t *testing.T, path string) (dir *pnode, name string) {
	rel, err := filepath.Rel(m.root, path)
	require.NoError(t, err, path)
	parts := strings.Split(rel, string(filepath.Separator))
	cur := m.nodes[1]
	for _, p := range parts[:len(parts)-1] {
		id, ok := cur.ents[p]
		require.True(t, ok, "the trace names %s, which the model does not have", path)
		cur = m.nodes[id]
	}
	return cur, parts[len(parts)-1]
}

func (m *fsModel) ino(t *testing.T, path string) int {
	if path == m.root {
		return 1
	}
	d, name := m.lookup(t, path)
	id, ok := d.ents[name]
	require.True(t, ok, "the trace names %s, which the model does not have", path)
	return id
}

type fsOp struct {
	op, a, b string
	data     []byte
}

func (o fsOp) String() string {
	s := o.op + " " + filepath.Base(o.a)
	if o.b != "" {
		s += " " + filepath.Base(o.b)
	}
	return s
}

func (m *fsModel) apply(t *testing.T, o fsOp) {
	switch o.op {
	case "create":
		d, name := m.lookup(t, o.a)
		d.ents[name] = m.add(&pnode{data: o.data})
	case "mkdir":
		d, name := m.lookup(t, o.a)
		d.ents[name] = m.add(&pnode{dir: true, ents: map[string]int{}})
	case "fsync":
		id := m.ino(t, o.a)
		m.durData[id] = m.nodes[id].data
	case "fsyncdir":
		id := m.ino(t, o.a)
		m.durEnts[id] = maps.Clone(m.nodes[id].ents)
	case "rename", "link":
		id := m.ino(t, o.a)
		if o.op == "rename" {
			d, name := m.lookup(t, o.a)
			delete(d.ents, name)
		}
		d, name := m.lookup(t, o.b)
		d.ents[name] = id
	case "exchange":
		da, na := m.lookup(t, o.a)
		db, nb := m.lookup(t, o.b)
		da.ents[na], db.ents[nb] = db.ents[nb], da.ents[na]
	case "remove":
		d, name := m.lookup(t, o.a)
		delete(d.ents, name)
	default:
		t.Fatalf("unknown op %q", o.op)
	}
}

// materialize writes what a power loss leaves under dir: the durable
// entries of each directory reachable from the root, each file with its
// durable bytes (none when it was never fsynced).
func (m *fsModel) materialize(t *testing.T, dir string) {
	var write func(id int, path string)
	write = func(id int, path string) {
		n := m.nodes[id]
		if !n.dir {
			require.NoError(t, os.WriteFile(path, m.durData[id], 0o644))
			return
		}
		require.NoError(t, os.MkdirAll(path, 0o755))
		for _, name := range slices.Sorted(maps.Keys(m.durEnts[id])) {
			write(m.durEnts[id][name], filepath.Join(path, name))
		}
	}
	write(1, dir)
}

// TestWriteFilesPowerLossAtEveryStep: in every mode, a power loss after any
// operation of the write leaves, once the next run's recovery is done, the
// previous set or the new one, never a mix or a file with lost bytes.
// Issue 12, item 11 ("fsync before rename"): without the fsync of the
// staged directory before the swap, or of a file before it is linked into
// place, this test finds the point where the new set is empty or torn.
func TestWriteFilesPowerLossAtEveryStep(t *testing.T) {
	restoreHooks(t)
	t.Cleanup(func() { fsTrace = nil })
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			exchange = renameExchange
			useMode(mode)
			out, own := prepareOut(t, mode)
			root := filepath.Dir(out)
			m := newModel(t, root)
			var ops []fsOp
			fsTrace = func(op, a, b string, data []byte) {
				ops = append(ops, fsOp{op, a, b, slices.Clone(data)})
			}
			require.NoError(t, writeFiles(out, artifacts("new")))
			fsTrace = nil
			require.NotEmpty(t, ops)
			for i := 0; i <= len(ops); i++ {
				if i > 0 {
					m.apply(t, ops[i-1])
				}
				crash := filepath.Join(t.TempDir(), "disk")
				m.materialize(t, crash)
				dir := filepath.Join(crash, filepath.Base(out))
				where := "before the first operation"
				if i > 0 {
					where = fmt.Sprintf("after %s (operation %d of %d)", ops[i-1], i, len(ops))
				}
				require.NoError(t, recoverOut(dir), where)
				if _, err := os.Stat(dir); mode == "new" && err != nil {
					require.ErrorIs(t, err, fs.ErrNotExist)
					continue // no directory yet: nothing was there before either
				}
				if got := whichSet(t, dir, own); got != "old" && got != "new" {
					t.Fatalf("power loss %s: %s holds %s\n(the trace: %v)", where, mode, got, ops)
				}
				if i == len(ops) {
					require.Equal(t, "new", whichSet(t, dir, own), "after the last operation the new set is durable")
				}
			}
			t.Logf("%s: %d operations, a power loss after each leaves one complete set", mode, len(ops))
		})
	}
}
