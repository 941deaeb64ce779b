package k8s

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// SpecError is a value in a JobSpec or CollectSpec that Kubernetes would
// refuse, or that the manifests cannot carry: Field is the Go name of the
// field at fault ("Name", "CPU", "APIKey.Key", "Workload", …), so that a
// caller can say where the value came from (the CLI names the flag).
type SpecError struct {
	// Field is the spec field's Go name, a nested one dotted.
	Field string
	// Value is the field's value as given (a Workload's Name for
	// "Workload").
	Value any
	// Err says what is wrong with it.
	Err error
}

// Error describes the field in words, its value and the problem, e.g.
// `CPU request "2x": want a CPU quantity, e.g. 2 or 500m`.
func (e *SpecError) Error() string {
	name, ok := fieldNames[e.Field]
	if !ok {
		name = e.Field
	}
	if v := e.ValueText(); v != "" {
		name += " " + v
	}
	return name + ": " + e.Err.Error()
}

func (e *SpecError) Unwrap() error { return e.Err }

// ValueText is Value as Error writes it: a string quoted, a number as %v;
// "" when Value is nil.
func (e *SpecError) ValueText() string {
	switch v := e.Value.(type) {
	case nil:
		return ""
	case string:
		return strconv.Quote(v)
	default:
		return fmt.Sprint(v)
	}
}

// fieldNames are the fields' names in words, for SpecError.Error.
var fieldNames = map[string]string{
	"Name":         "name",
	"Namespace":    "namespace",
	"Shards":       "shards",
	"Image":        "image",
	"CPU":          "CPU request",
	"Memory":       "memory request",
	"Port":         "rendezvous port",
	"Spread":       "spread",
	"RecordsClaim": "records claim",
	"Workload":     "workload file",
	"APIKey.Name":  "API key's Secret",
	"APIKey.Key":   "API key's Secret key",
	"APIKeyEnv":    "API key's variable",
}

func specErr(field string, value any, msg string) error {
	return &SpecError{Field: field, Value: value, Err: errors.New(msg)}
}

// File is a file the pods read, carried in a ConfigMap.
type File struct {
	// Name is the file's name, which is its ConfigMap key: letters,
	// digits, '-', '_' and '.'.
	Name string
	// Data is its content: UTF-8 text (a ConfigMap's data is), at most
	// MaxFileBytes.
	Data []byte
}

// MaxFileBytes is the most a File holds: a ConfigMap holds 1 MiB, less
// room for its metadata.
const MaxFileBytes = 1000 * 1024

// SecretKey is one key of a Secret's data.
type SecretKey struct {
	// Name is the Secret's name; Key the key in its data.
	Name, Key string
}

// Spread is how hard a Job's pods spread over nodes.
type Spread string

const (
	// SpreadPreferred asks the scheduler to put the pods on distinct nodes
	// where it can, and to share nodes where it cannot.
	SpreadPreferred Spread = "preferred"
	// SpreadRequired puts at most one pod on a node: pods wait for a free
	// node, so a shard never shares a machine's CPU with another.
	SpreadRequired Spread = "required"
)

// dnsLabel is a Kubernetes object name that is also a DNS label (RFC 1123,
// up to 63 characters, the length checked apart); dataKey a key of a
// Secret's or ConfigMap's data.
var (
	dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dataKey  = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)
)

// quantity loosely checks a resource quantity (2, 500m, 1Gi, 1.5): enough
// to catch a typo before kubectl does, not the whole grammar.
var quantity = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$`)

// checkShards checks a pod count: an Indexed Job has at least one.
func checkShards(shards int) error {
	if shards < 1 {
		return specErr("Shards", shards, "want at least 1 pod")
	}
	return nil
}

// checkName checks a Job's name (its pods are NAME-INDEX, which must be a
// DNS label too, since the rendezvous is reached by the pod's hostname)
// and its namespace.
func checkName(name, namespace string, shards int) error {
	host := name + "-" + strconv.Itoa(max(shards-1, 0))
	switch {
	case !dnsLabel.MatchString(name) || len(host) > 63:
		return &SpecError{Field: "Name", Value: name, Err: fmt.Errorf(
			"want lowercase letters, digits and '-', starting and ending with a letter or digit, short enough that %q is at most 63 characters", host)}
	case namespace != "" && (!dnsLabel.MatchString(namespace) || len(namespace) > 63):
		return specErr("Namespace", namespace, "want a DNS label (lowercase letters, digits, '-')")
	}
	return nil
}

// checkImage checks an image reference loosely: present, one word.
func checkImage(image string) error {
	if strings.TrimSpace(image) == "" || strings.ContainsAny(image, " \t\n") {
		return specErr("Image", image, "want an image reference")
	}
	return nil
}

// checkClaim checks a PersistentVolumeClaim's name ("" none).
func checkClaim(claim string) error {
	if claim != "" && !dnsLabel.MatchString(claim) {
		return specErr("RecordsClaim", claim, "want a PersistentVolumeClaim's name")
	}
	return nil
}

// checkSecretKey checks a reference to a key of a Secret (a DNS label of
// at most 253 characters) and the variable its value goes in.
func checkSecretKey(ref *SecretKey, env string) error {
	switch {
	case !dnsLabel.MatchString(ref.Name) || len(ref.Name) > 253:
		return specErr("APIKey.Name", ref.Name, "want a Secret's name")
	case !dataKey.MatchString(ref.Key):
		return specErr("APIKey.Key", ref.Key, "want a key of the Secret's data (letters, digits, '-', '_' and '.')")
	case env == "":
		return specErr("APIKeyEnv", env, "want the name of the variable the key goes in")
	}
	return nil
}

// checkFile checks that a ConfigMap can carry f.
func checkFile(f *File) error {
	switch {
	case len(f.Data) > MaxFileBytes:
		return &SpecError{Field: "Workload", Value: f.Name, Err: fmt.Errorf(
			"%d bytes; a ConfigMap holds about 1 MiB: put the file in an image or a volume and give its path in the pod", len(f.Data))}
	case !utf8.Valid(f.Data):
		return specErr("Workload", f.Name, "not UTF-8 text, which a ConfigMap's data must be")
	case !dataKey.MatchString(f.Name):
		return specErr("Workload", f.Name, "a ConfigMap key allows letters, digits, '-', '_' and '.': rename the file")
	}
	return nil
}
