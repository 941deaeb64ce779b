package setting

// OutputError is an output the setting Field asked for that failed: a
// file that could not be written (Path: the file, "" when Err names it),
// a metrics server that could not start. It lives here, beside Error,
// because every command that writes what a setting names returns it — a
// run, a report, sim fit, a watch — and the command line maps it to the
// flag the same way for all of them.
type OutputError struct {
	Field, Path string
	Err         error
}

func (e *OutputError) Error() string {
	if e.Field == "" {
		return e.Err.Error()
	}
	return e.Field + ": " + e.Err.Error()
}

// Unwrap is the failure itself.
func (e *OutputError) Unwrap() error { return e.Err }

// Failed is the setting that asked for the output, and its file.
func (e *OutputError) Failed() (field, value string) { return e.Field, e.Path }
