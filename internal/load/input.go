package load

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"syscall"
	"unicode/utf8"

	"parc.dev/parc/internal/diag"
)

// MaxInputBytes is the largest spec file parc reads: 1 MiB, a hundred times
// the largest real spec. Bigger input (or an endless one such as /dev/zero)
// is refused before it is parsed. The README's Limits section states it.
const MaxInputBytes = 1 << 20

// readSpec reads a spec file, at most MaxInputBytes of it. A file that cannot
// be read is a diagnostic whose code says why: file-not-found,
// permission-denied, or file-unreadable (a directory, an I/O error).
func readSpec(name string) ([]byte, *diag.Diagnostic) {
	f, err := os.Open(name)
	if err != nil {
		return nil, readError(name, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, readError(name, &fs.PathError{Op: "read", Path: name, Err: syscall.EISDIR})
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxInputBytes+1))
	if err != nil {
		return nil, readError(name, err)
	}
	if d := checkInput(name, data); d != nil {
		return nil, d
	}
	return data, nil
}

// readError classifies an error opening or reading a spec file.
func readError(name string, err error) *diag.Diagnostic {
	msg := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		msg = pe.Err.Error()
	}
	d := &diag.Diagnostic{Severity: diag.Error, Pos: diag.Pos{File: name}, Message: fmt.Sprintf("cannot read %s: %s", name, msg)}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		d.Code, d.Hint = "file-not-found", "check the path; parc takes .cue and .hcl spec files"
	case errors.Is(err, fs.ErrPermission):
		d.Code, d.Hint = "permission-denied", "the file exists but this user may not read it: check its permissions (ls -l) and those of its directories"
	case errors.Is(err, syscall.EISDIR):
		d.Code, d.Hint = "file-unreadable", "give a spec file, not a directory"
	default:
		d.Code, d.Hint = "file-unreadable", "check that the file is readable"
	}
	return d
}

// TooLarge is input-too-large for data read from name when it holds more
// than MaxInputBytes, nil otherwise: the one bound on every input parc reads
// (specs, and the importers' launch scripts and config.json); what says
// what name should be ("a spec", "a launch script").
func TooLarge(name string, data []byte, what string) *diag.Diagnostic {
	if len(data) <= MaxInputBytes {
		return nil
	}
	return &diag.Diagnostic{Severity: diag.Error, Code: "input-too-large", Pos: diag.Pos{File: name},
		Message: fmt.Sprintf("%s is larger than %d bytes (%d MiB), the most parc reads as %s", name, MaxInputBytes, MaxInputBytes>>20, what),
		Hint:    what + " is a few kilobytes: check that this is the file you meant"}
}

// checkInput refuses input parc cannot take as a spec: more than
// MaxInputBytes, or not UTF-8 text (a PNG renamed .cue). A binary file is
// reported at its first byte that is not text, naming what it looks like.
func checkInput(name string, data []byte) *diag.Diagnostic {
	if d := TooLarge(name, data, "a spec"); d != nil {
		return d
	}
	bad := bytes.IndexByte(data, 0)
	if i := invalidUTF8(data); i >= 0 && (bad < 0 || i < bad) {
		bad = i
	}
	if bad < 0 {
		return nil
	}
	line := 1 + bytes.Count(data[:bad], []byte("\n"))
	col := 1 + utf8.RuneCount(data[bytes.LastIndexByte(data[:bad], '\n')+1:bad])
	kind := http.DetectContentType(data)
	what := "binary data"
	if kind != "application/octet-stream" && !bytes.HasPrefix([]byte(kind), []byte("text/")) {
		what = "binary data (" + kind + ")"
	}
	return &diag.Diagnostic{Severity: diag.Error, Code: "not-text", Pos: diag.Pos{File: name, Line: line, Column: col},
		Message: fmt.Sprintf("%s is %s, not UTF-8 text: byte 0x%02x cannot start a character (CUE and HCL read it as an illegal character)", name, what, data[bad]),
		Hint:    "give a .cue or .hcl spec; both are UTF-8 text"}
}

// invalidUTF8 is the offset of the first byte of data that is not valid
// UTF-8, or -1.
func invalidUTF8(data []byte) int {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}
