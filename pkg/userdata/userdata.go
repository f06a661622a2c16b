// Package userdata reads and merges instance user data: MIME multi-part documents (AL2023, whose
// nodeadm reads application/node.eks.aws parts and runs shell scripts) and TOML settings
// (Bottlerocket). It is pure: no cloud, no API server.
package userdata

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"strings"

	"github.com/BurntSushi/toml"
)

// Content types nodeadm and cloud-init tell apart.
const (
	NodeConfigType = "application/node.eks.aws"
	ShellType      = `text/x-shellscript; charset="us-ascii"`
	CloudConfig    = `text/cloud-config; charset="us-ascii"`
)

// Boundary separates the parts of the MIME documents Tailor writes.
const Boundary = "//"

// Part is one part of a MIME multi-part user data.
type Part struct {
	ContentType string
	Body        string
}

// Parts returns the parts of user data: those of a MIME multi-part document, or the user data
// as one part of the type its first line says (a NodeConfig, cloud-config, or else a script).
// User data that starts with MIME headers must be a multi-part document.
func Parts(userData string) ([]Part, error) {
	if !strings.HasPrefix(userData, "MIME-Version:") && !strings.HasPrefix(userData, "Content-Type:") {
		return []Part{{ContentType: bareType(userData), Body: userData}}, nil
	}
	parts, ok, err := Multipart(userData)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, fmt.Errorf("MIME user data must be multipart with a boundary")
	case len(parts) == 0:
		return nil, fmt.Errorf("MIME user data has no parts")
	}
	return parts, nil
}

// Multipart reads user data as a MIME multi-part document, as cloud-init and nodeadm do: ok is
// false when it is not one (no MIME headers, or another media type), and then the reader takes
// the user data whole.
func Multipart(userData string) (parts []Part, ok bool, err error) {
	msg, err := mail.ReadMessage(strings.NewReader(userData))
	if err != nil {
		return nil, false, nil
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || !strings.HasPrefix(mediaType, "multipart/") || params["boundary"] == "" {
		return nil, false, nil
	}
	r := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := r.NextPart()
		if err == io.EOF {
			return parts, true, nil
		}
		if err != nil {
			return nil, true, fmt.Errorf("MIME user data: %w", err)
		}
		var body bytes.Buffer
		if _, err := io.Copy(&body, p); err != nil {
			return nil, true, fmt.Errorf("MIME user data: %w", err)
		}
		ct := p.Header.Get("Content-Type")
		if ct == "" {
			ct = "text/plain"
		}
		parts = append(parts, Part{ContentType: ct, Body: body.String()})
	}
}

// bareType is the content type of user data that is not MIME.
func bareType(userData string) string {
	switch {
	case strings.HasPrefix(userData, "#cloud-config"):
		return CloudConfig
	case strings.Contains(userData, "node.eks.aws/") && strings.Contains(userData, "NodeConfig"):
		return NodeConfigType
	}
	return ShellType
}

// MIME writes parts as one multi-part document (with the Boundary, which no part may hold on a
// line of its own).
func MIME(parts []Part) (string, error) {
	var b strings.Builder
	b.WriteString("MIME-Version: 1.0\n")
	fmt.Fprintf(&b, "Content-Type: multipart/mixed; boundary=%q\n\n", Boundary)
	for _, p := range parts {
		if strings.Contains("\n"+p.Body, "\n--"+Boundary) {
			return "", fmt.Errorf("a user data part holds the MIME boundary line --%s", Boundary)
		}
		fmt.Fprintf(&b, "--%s\n", Boundary)
		fmt.Fprintf(&b, "Content-Type: %s\n\n", p.ContentType)
		b.WriteString(p.Body)
		if !strings.HasSuffix(p.Body, "\n") {
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "--%s--\n", Boundary)
	return b.String(), nil
}

// MergeTOML merges Bottlerocket settings: ours over the user's where both set a key, tables
// merged key by key, except the tables named (dotted paths), which only ours may set: the user's
// are dropped. The result is TOML Bottlerocket reads; keys come out sorted.
func MergeTOML(user, ours string, replace ...string) (string, error) {
	var u, o map[string]any
	if _, err := toml.Decode(user, &u); err != nil {
		return "", fmt.Errorf("bottlerocket user data: %w", err)
	}
	if _, err := toml.Decode(ours, &o); err != nil {
		return "", fmt.Errorf("bottlerocket settings: %w", err)
	}
	for _, path := range replace {
		deleteAt(u, path)
	}
	merged := mergeTables(u, o)
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(merged); err != nil {
		return "", fmt.Errorf("bottlerocket settings: %w", err)
	}
	return b.String(), nil
}

func mergeTables(base, over map[string]any) map[string]any {
	if base == nil {
		base = map[string]any{}
	}
	for k, v := range over {
		bt, bok := base[k].(map[string]any)
		ot, ook := v.(map[string]any)
		if bok && ook {
			base[k] = mergeTables(bt, ot)
		} else {
			base[k] = v
		}
	}
	return base
}

// deleteAt removes the value at a dotted path of tables, if there is one.
func deleteAt(t map[string]any, path string) {
	keys := strings.Split(path, ".")
	for _, k := range keys[:len(keys)-1] {
		next, ok := t[k].(map[string]any)
		if !ok {
			return
		}
		t = next
	}
	delete(t, keys[len(keys)-1])
}
