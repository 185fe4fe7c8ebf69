package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"parc.dev/parc/compiler"
)

// failAt is called at each step of writeFiles with the step's name; tests
// make it return an error (a failed step) or kill the process (a crash).
var failAt = func(step string) error { return nil }

// fsTrace, when a test sets it, is told every change writeFiles makes to
// the file system and every fsync, in order (op create, fsync, mkdir,
// fsyncdir, rename, exchange, link, remove): the power-loss test replays
// them against a model of what a crash keeps.
var fsTrace func(op, a, b string, data []byte)

func trace(op, a, b string, data []byte) {
	if fsTrace != nil {
		fsTrace(op, a, b, data)
	}
}

func rename(a, b string) error {
	err := os.Rename(a, b)
	if err == nil {
		trace("rename", a, b, nil)
	}
	return err
}

func remove(p string) error {
	err := os.Remove(p)
	if err == nil {
		trace("remove", p, "", nil)
	}
	return err
}

func removeAll(p string) error {
	_, lerr := os.Lstat(p)
	err := os.RemoveAll(p)
	if err == nil && lerr == nil {
		trace("remove", p, "", nil)
	}
	return err
}

func link(a, b string) error {
	err := os.Link(a, b)
	if err == nil {
		trace("link", a, b, nil)
	}
	return err
}

// exchange swaps two directories atomically; tests make it unsupported.
var exchange = renameExchange

// errNoExchange: the file system cannot swap the directories, or the
// directory holds something a swap cannot carry over; writeFiles falls back
// to the journal.
var errNoExchange = errors.New("directory exchange not possible")

// Names of parc's own entries next to and inside the output directory.
const (
	siblingTag  = ".parc-new-"    // parent/.OUT.parc-new-*: the new set, then the old one after the swap
	stagePrefix = ".parc-stage-"  // OUT/.parc-stage-*: the staged set (journal)
	backupPref  = ".parc-old-"    // OUT/.parc-old-*: the previous files (journal)
	journalName = ".parc-commit"  // OUT/.parc-commit: the commit record (journal)
	journalTmp  = ".parc-commit~" // written, fsynced, then renamed to journalName
)

// writeFiles writes the artifacts into dir as one set: at every instant, a
// crash or power loss included, dir holds either the complete previous set or
// the complete new one, never launch.json from one spec next to
// submit.sbatch from another. Other files in dir are kept.
//
// The set is built in a new directory next to dir (parent/.DIR.parc-new-*):
// the artifacts written and fsynced, the other files of dir hard-linked in,
// the directory given dir's mode and fsynced. Then one renameat2
// RENAME_EXCHANGE swaps the two directories (the commit), the parent is
// fsynced, and the previous directory, now at the temporary name, is
// removed. A directory that does not exist yet is created by one rename.
//
// Where the swap is not possible (the file system has no RENAME_EXCHANGE,
// dir holds subdirectories or is owned by someone else, dir is a mount
// point, a process has its working directory in dir: `-o .`, a shell, a
// running job), the files are replaced in place under a journal: the new set is
// staged and fsynced inside dir, the previous files hard-linked to a backup,
// and a commit record (.parc-commit, fsynced) written before the first
// rename. A failed rename puts the previous files back. A crash after the
// record leaves it behind, and the next parc compile into dir finishes the
// renames first (so the set is the new one); a crash before it leaves dir
// untouched. Only in this fallback can a reader see a mixed set, while the
// renames run.
//
// Leftovers of an interrupted write are cleaned up before anything else.
func writeFiles(dir string, files compiler.Files) error {
	target, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if resolved, err := filepath.EvalSymlinks(target); err == nil {
		target = resolved // a symlinked output directory: write where it points
	}
	parent, base := filepath.Dir(target), filepath.Base(target)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	unlock := lockDir(parent)
	defer unlock()
	if err := recoverOut(target); err != nil {
		return fmt.Errorf("cannot finish an interrupted write of %s: %w", dir, err)
	}
	st, err := os.Lstat(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return writeNew(parent, base, target, files)
	case err != nil:
		return err
	case !st.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	for _, name := range files.Names() {
		old, err := os.Lstat(filepath.Join(target, name))
		if err == nil && !old.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file; parc compile would replace it", filepath.Join(dir, name))
		}
	}
	err = writeExchanged(parent, base, target, st, files)
	if !errors.Is(err, errNoExchange) {
		return err
	}
	return writeJournaled(target, files)
}

// sibling makes a new, empty directory next to target for the new set.
func sibling(parent, base string) (string, error) {
	for {
		p := filepath.Join(parent, "."+base+siblingTag+fmt.Sprintf("%d-%08x", os.Getpid(), rand.Uint32()))
		err := os.Mkdir(p, 0o755)
		if err == nil {
			trace("mkdir", p, "", nil)
		}
		if !errors.Is(err, fs.ErrExist) {
			return p, err
		}
	}
}

// stageFiles writes every artifact into dir, fsynced, with its mode.
func stageFiles(dir string, files compiler.Files) error {
	for _, name := range files.Names() {
		mode := fs.FileMode(0o644)
		if compiler.Executable(name) {
			mode = 0o755
		}
		if err := writeSynced(filepath.Join(dir, name), files[name], mode); err != nil {
			return err
		}
	}
	return nil
}

// writeNew creates target, which does not exist, with the set: built next
// to it, then renamed into place.
func writeNew(parent, base, target string, files compiler.Files) (err error) {
	tmp, err := sibling(parent, base)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			removeAll(tmp)
		}
	}()
	if err := errors.Join(stageFiles(tmp, files), failAt("stage")); err != nil {
		return err
	}
	if err := errors.Join(syncDir(tmp), failAt("sync-new")); err != nil {
		return err
	}
	if err := do("rename-dir", func() error { return rename(tmp, target) }); err != nil {
		return err
	}
	return do("sync-parent", func() error { return syncDir(parent) })
}

// writeExchanged builds the new directory next to target and swaps it in.
// It returns errNoExchange, having changed nothing, when the swap cannot
// be done.
func writeExchanged(parent, base, target string, st fs.FileInfo, files compiler.Files) (err error) {
	gid, ok := ownGroup(st)
	if !ok {
		return errNoExchange // the new directory could not get the owner back
	}
	if cwdInside(target) {
		return errNoExchange // a shell or a job working in target would be left in the old directory
	}
	entries, err := os.ReadDir(target)
	if err != nil {
		return err
	}
	var carry []string
	for _, e := range entries {
		if files[e.Name()] != nil {
			continue
		}
		if e.IsDir() {
			return errNoExchange // a subdirectory (logs/) cannot be carried over by a link
		}
		carry = append(carry, e.Name())
	}

	tmp, err := sibling(parent, base)
	if err != nil {
		return errNoExchange // the parent is not writable
	}
	swapped := false
	defer func() {
		if err != nil && !swapped {
			removeAll(tmp)
		}
	}()
	if err := errors.Join(stageFiles(tmp, files), failAt("stage")); err != nil {
		return err
	}
	for _, name := range carry {
		if link(filepath.Join(target, name), filepath.Join(tmp, name)) != nil {
			removeAll(tmp)
			return errNoExchange // a file we may not link (fs.protected_hardlinks)
		}
	}
	if err := failAt("carry"); err != nil {
		return err
	}
	if err := os.Chmod(tmp, st.Mode()&(fs.ModePerm|fs.ModeSetgid|fs.ModeSticky)); err != nil {
		return err
	}
	if nst, err := os.Stat(tmp); err == nil && gid >= 0 {
		if g, _ := ownGroup(nst); g != gid && os.Chown(tmp, -1, gid) != nil {
			removeAll(tmp)
			return errNoExchange
		}
	}
	if err := errors.Join(syncDir(tmp), failAt("sync-new")); err != nil {
		return err
	}
	if err := do("exchange", func() error {
		err := exchange(tmp, target)
		if err == nil {
			trace("exchange", tmp, target, nil)
		}
		return err
	}); err != nil {
		removeAll(tmp)
		if errors.Is(err, errNoExchange) {
			return err
		}
		return fmt.Errorf("swapping in the new set: %w", err)
	}
	swapped = true // the commit: target is the new set, tmp the old one
	if err := do("sync-parent", func() error { return syncDir(parent) }); err != nil {
		return fmt.Errorf("wrote the new set, but cannot make it durable: %w", err)
	}
	// Files created in the old directory while the new one was built.
	late, _ := os.ReadDir(tmp)
	for _, e := range late {
		name := e.Name()
		if files[name] != nil || contains(carry, name) {
			continue
		}
		if _, err := os.Lstat(filepath.Join(target, name)); errors.Is(err, fs.ErrNotExist) {
			_ = rename(filepath.Join(tmp, name), filepath.Join(target, name))
		}
	}
	if err := do("remove-old", func() error { return removeAll(tmp) }); err != nil {
		return fmt.Errorf("wrote the new set, but cannot remove the previous one at %s: %w", tmp, err)
	}
	return nil
}

// do runs one step of a write, unless the test hook fails it first.
func do(step string, f func() error) error {
	if err := failAt(step); err != nil {
		return err
	}
	return f()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// journal is the commit record of an in-place write: once it is on disk,
// the staged set is complete and durable, and recovery finishes the renames.
type journal struct {
	Stage  string   `json:"stage"`  // directory inside the output directory
	Backup string   `json:"backup"` // directory inside the output directory
	Names  []string `json:"names"`
}

// writeJournaled replaces the files inside target under a journal.
func writeJournaled(target string, files compiler.Files) (err error) {
	stage, err := os.MkdirTemp(target, stagePrefix+"*")
	if err != nil {
		return err
	}
	trace("mkdir", stage, "", nil)
	backup, err := os.MkdirTemp(target, backupPref+"*")
	if err != nil {
		removeAll(stage)
		return err
	}
	trace("mkdir", backup, "", nil)
	journaled := false
	defer func() {
		if err == nil || !journaled {
			removeAll(stage)
			removeAll(backup)
		}
	}()
	if err := errors.Join(stageFiles(stage, files), syncDir(stage), failAt("stage")); err != nil {
		return err
	}
	names := files.Names()
	hadOld := map[string]bool{}
	for _, name := range names {
		old := filepath.Join(target, name)
		if _, err := os.Lstat(old); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := keepCopy(old, filepath.Join(backup, name)); err != nil {
			return fmt.Errorf("cannot keep a copy of %s while replacing it: %w", old, err)
		}
		hadOld[name] = true
	}
	if err := errors.Join(syncDir(backup), failAt("backup")); err != nil {
		return err
	}
	rec, _ := json.Marshal(journal{Stage: filepath.Base(stage), Backup: filepath.Base(backup), Names: names})
	tmp := filepath.Join(target, journalTmp)
	remove(tmp)
	if err := errors.Join(writeSynced(tmp, rec, 0o644), failAt("journal")); err != nil {
		remove(tmp)
		return err
	}
	if err := rename(tmp, filepath.Join(target, journalName)); err != nil {
		remove(tmp)
		return err
	}
	journaled = true
	if err := syncDir(target); err != nil {
		return errors.Join(err, unjournal(target, backup, nil, hadOld))
	}
	for i, name := range names {
		err := do("rename "+name, func() error { return rename(filepath.Join(stage, name), filepath.Join(target, name)) })
		if err != nil {
			if rerr := unjournal(target, backup, names[:i], hadOld); rerr != nil {
				return fmt.Errorf("writing %s: %w; putting the previous files back failed too (%v): the next parc compile into %s finishes the write",
					name, err, rerr, target)
			}
			removeAll(stage)
			removeAll(backup)
			return fmt.Errorf("writing %s: %w; the previous files are back in place, nothing changed", name, err)
		}
	}
	if err := errors.Join(syncDir(target), failAt("sync-dir")); err != nil {
		return fmt.Errorf("wrote the new set, but cannot make it durable (the next parc compile finishes it): %w", err)
	}
	if err := do("unjournal", func() error { return errors.Join(remove(filepath.Join(target, journalName)), syncDir(target)) }); err != nil {
		return fmt.Errorf("wrote the new set, but cannot remove its commit record (the next parc compile does): %w", err)
	}
	return nil
}

// unjournal rolls a failed in-place write back: the previous files of done
// back from backup (or the new ones removed when there were none), then the
// commit record removed. Until the record is gone, recovery would finish the
// write instead, which also leaves one complete set.
func unjournal(target, backup string, done []string, hadOld map[string]bool) error {
	var errs []error
	for _, name := range done {
		dst := filepath.Join(target, name)
		if hadOld[name] {
			errs = append(errs, rename(filepath.Join(backup, name), dst))
		} else {
			errs = append(errs, remove(dst))
		}
	}
	errs = append(errs, syncDir(target))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return errors.Join(remove(filepath.Join(target, journalName)), syncDir(target))
}

// recoverOut finishes or discards an interrupted write of target: an
// in-place write whose commit record is on disk is finished (its staged
// files renamed into place); every other leftover (a new set never swapped
// in, an old one not yet removed, staging and backup directories without a
// record) is removed.
func recoverOut(target string) error {
	parent, base := filepath.Dir(target), filepath.Base(target)
	if entries, err := os.ReadDir(parent); err == nil {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "."+base+siblingTag) && e.IsDir() {
				if err := removeAll(filepath.Join(parent, e.Name())); err != nil {
					return err
				}
			}
		}
	}
	entries, err := os.ReadDir(target)
	if err != nil {
		return nil // no directory yet, or one we cannot list (writing fails later)
	}
	if rec, err := os.ReadFile(filepath.Join(target, journalName)); err == nil {
		var j journal
		if err := json.Unmarshal(rec, &j); err != nil || !isBase(j.Stage) {
			return fmt.Errorf("%s is not a parc commit record: %v", filepath.Join(target, journalName), err)
		}
		for _, name := range j.Names {
			if !isBase(name) {
				return fmt.Errorf("%s names %q", filepath.Join(target, journalName), name)
			}
			staged := filepath.Join(target, j.Stage, name)
			if _, err := os.Lstat(staged); err == nil {
				if err := rename(staged, filepath.Join(target, name)); err != nil {
					return err
				}
			}
		}
		if err := errors.Join(syncDir(target), remove(filepath.Join(target, journalName)), syncDir(target)); err != nil {
			return err
		}
	}
	for _, e := range entries {
		n := e.Name()
		if (strings.HasPrefix(n, stagePrefix) || strings.HasPrefix(n, backupPref)) && e.IsDir() || n == journalTmp {
			if err := removeAll(filepath.Join(target, n)); err != nil {
				return err
			}
		}
	}
	return nil
}

func isBase(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsRune(name, '/')
}

// writeSynced writes data to a new file and fsyncs it before closing.
func writeSynced(path string, data []byte, mode fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	trace("create", path, "", data)
	serr := f.Sync()
	if serr == nil {
		trace("fsync", path, "", nil)
	}
	cerr := f.Close()
	return errors.Join(werr, serr, cerr, os.Chmod(path, mode)) // Chmod: the umask may have narrowed mode
}

// keepCopy hard-links src to dst, or copies it where links are not allowed.
func keepCopy(src, dst string) error {
	if link(src, dst) == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, st.Mode().Perm())
	if err != nil {
		return err
	}
	_, cerr := io.Copy(out, in)
	serr := out.Sync()
	if fsTrace != nil && cerr == nil && serr == nil {
		data, _ := os.ReadFile(dst)
		trace("create", dst, "", data)
		trace("fsync", dst, "", nil)
	}
	return errors.Join(cerr, serr, out.Close())
}

// syncDir fsyncs a directory, so the renames in it survive a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	serr := d.Sync()
	if errors.Is(serr, errors.ErrUnsupported) || errors.Is(serr, os.ErrInvalid) || errors.Is(serr, syscall.EINVAL) {
		serr = nil // file systems that cannot sync a directory
	}
	if serr == nil {
		trace("fsyncdir", dir, "", nil)
	}
	return errors.Join(serr, d.Close())
}
