package diag

import "fmt"

// Reporter adds diagnostics at the positions its Locator gives, so a call
// names the blamed field once:
//
//	r := diag.NewReporter(at)
//	r.Errorf("parallel.tp", "tp-heads", hint, "tp=%d does not divide heads=%d", tp, heads).
//		Related("model.heads", "heads = %d", heads)
type Reporter struct {
	at   Locator
	List List
}

// NewReporter returns a Reporter that places diagnostics with at (nil means
// NoPos).
func NewReporter(at Locator) *Reporter {
	if at == nil {
		at = NoPos
	}
	return &Reporter{at: at}
}

// At is the Reporter's Locator.
func (r *Reporter) At(path string) Pos { return r.at(path) }

// Report adds a diagnostic of severity sev blaming the field at path.
func (r *Reporter) Report(sev Severity, path, code, hint, format string, args ...any) Entry {
	r.List.Add(Diagnostic{Severity: sev, Code: code, Path: path, Pos: r.at(path), Hint: hint, Message: fmt.Sprintf(format, args...)})
	return Entry{r, len(r.List) - 1}
}

// Errorf adds an error blaming the field at path.
func (r *Reporter) Errorf(path, code, hint, format string, args ...any) Entry {
	return r.Report(Error, path, code, hint, format, args...)
}

// Warnf adds a warning blaming the field at path.
func (r *Reporter) Warnf(path, code, hint, format string, args ...any) Entry {
	return r.Report(Warning, path, code, hint, format, args...)
}

// Entry is a diagnostic a Reporter just added.
type Entry struct {
	r *Reporter
	i int
}

// Related adds the field at path as a related position of the diagnostic,
// with a message saying what it contributes ("heads = 64"). A field found at
// the diagnostic's own position, or at no position, adds nothing: the
// diagnostic already shows it; two found at one place share one entry.
func (e Entry) Related(path, format string, args ...any) Entry {
	d := &e.r.List[e.i]
	p := e.r.at(path)
	if !p.IsValid() || p == d.Pos {
		return e
	}
	msg := fmt.Sprintf(format, args...)
	for i := range d.Related {
		if d.Related[i].Pos == p { // two fields from one place (a preset)
			d.Related[i].Message += "; " + msg
			return e
		}
	}
	d.Related = append(d.Related, Related{Pos: p, Message: msg})
	return e
}
