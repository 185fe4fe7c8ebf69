// Package load is the first stage of the compiler: it turns a user's spec file
// (CUE, or HCL) into one cue.Value unified with the embedded #Plan schema, with
// the embedded preset library importable, and reports every problem at the
// user's own file:line:col. Decode then gives the typed spec.Spec and a
// diag.Locator that maps a spec path back to the user's text.
package load
