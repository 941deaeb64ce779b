package cli

import (
	"net"
	"regexp"
	"strconv"
	"testing"
)

// TestServeBusyPort: serve on a port already taken says so in one line
// naming --port, not the package that failed to listen.
func TestServeBusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	r := runCLI(t, t.Context(), nil, "serve", "--host", "127.0.0.1", "--port", port)
	want := regexp.MustCompile(`^goodput: --port ` + port + `: listen tcp 127\.0\.0\.1:` + port + `: bind: address already in use\n$`)
	if r.code != ExitRun || !want.MatchString(r.stderr) {
		t.Errorf("serve on a busy port: exit %d, stderr %q; want %d and one line matching %s", r.code, r.stderr, ExitRun, want)
	}
}
