package userdata

import (
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

func TestParts(t *testing.T) {
	mimeDoc := "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"b\"\n\n--b\nContent-Type: text/x-shellscript\n\necho one\n--b\nContent-Type: application/node.eks.aws\n\nkind: NodeConfig\n--b--\n"
	tests := []struct {
		name, userData string
		want           []Part
		wantErr        string
	}{
		{name: "script", userData: "#!/bin/bash\necho hi\n", want: []Part{{ShellType, "#!/bin/bash\necho hi\n"}}},
		{name: "NodeConfig", userData: "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\n", want: []Part{{NodeConfigType, "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\n"}}},
		{name: "cloud-config", userData: "#cloud-config\npackages: [jq]\n", want: []Part{{CloudConfig, "#cloud-config\npackages: [jq]\n"}}},
		{name: "MIME", userData: mimeDoc, want: []Part{{"text/x-shellscript", "echo one"}, {"application/node.eks.aws", "kind: NodeConfig"}}},
		{name: "MIME not multipart", userData: "MIME-Version: 1.0\nContent-Type: text/plain\n\nhi", wantErr: "must be multipart"},
		{name: "MIME without parts", userData: "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"b\"\n\n--b--\n", wantErr: "MIME user data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parts(tt.userData)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parts = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// A document MIME writes reads back as the same parts.
func TestMIMERoundTrip(t *testing.T) {
	parts := []Part{{ShellType, "echo one\n"}, {NodeConfigType, "kind: NodeConfig\n"}}
	doc, err := MIME(parts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parts(doc)
	if err != nil || len(got) != 2 || got[0].Body != "echo one\n" || got[1].ContentType != NodeConfigType {
		t.Errorf("round trip %q, %v", got, err)
	}
	if _, err := MIME([]Part{{ShellType, "echo\n--//\n"}}); err == nil {
		t.Error("a part holding the boundary line was written")
	}
}

// Ours wins where both set a key; the user's other settings stay, tables merged key by key.
func TestMergeTOML(t *testing.T) {
	user := "[settings.kernel]\nlockdown = \"integrity\"\n[settings.kubernetes]\nmax-pods = 7\nimage-gc-high-threshold-percent = 80\n[settings.kubernetes.node-labels]\nteam = \"a\"\n"
	ours := "[settings.kubernetes]\ncluster-name = \"demo\"\nmax-pods = 29\n[settings.kubernetes.node-labels]\n\"tailor.dev/pool\" = \"general\"\n"
	merged, err := MergeTOML(user, ours)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if _, err := toml.Decode(merged, &got); err != nil {
		t.Fatalf("merged settings do not decode: %v\n%s", err, merged)
	}
	k := got["settings"].(map[string]any)["kubernetes"].(map[string]any)
	if k["max-pods"] != int64(29) || k["cluster-name"] != "demo" || k["image-gc-high-threshold-percent"] != int64(80) {
		t.Errorf("settings.kubernetes %v", k)
	}
	if labels := k["node-labels"].(map[string]any); labels["team"] != "a" || labels["tailor.dev/pool"] != "general" {
		t.Errorf("node labels %v", labels)
	}
	if got["settings"].(map[string]any)["kernel"].(map[string]any)["lockdown"] != "integrity" {
		t.Errorf("the user's kernel settings are gone:\n%s", merged)
	}
	// Named tables are ours alone: the user's go, whether or not we set ours.
	replaced, err := MergeTOML(user+"[settings.kubernetes.node-taints]\ngpu = [\"true:NoSchedule\"]\n", ours+"[settings.kubernetes.node-taints]\nx = [\":NoSchedule\"]\n", "settings.kubernetes.node-taints")
	if err != nil || strings.Contains(replaced, "gpu") || !strings.Contains(replaced, "x = ") {
		t.Errorf("taints not replaced (%v):\n%s", err, replaced)
	}
	dropped, err := MergeTOML(user+"[settings.kubernetes.node-taints]\ngpu = [\"true:NoSchedule\"]\n", ours, "settings.kubernetes.node-taints")
	if err != nil || strings.Contains(dropped, "gpu") {
		t.Errorf("the user's taints stayed (%v):\n%s", err, dropped)
	}
	if _, err := MergeTOML("not = [toml", ours); err == nil {
		t.Error("broken user TOML merged")
	}
}
