package nodeagent

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestPodMounts(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Volumes: []corev1.Volume{
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
			{Name: "certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}},
			{Name: "other", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/data"}}},
		},
		InitContainers: []corev1.Container{{Name: "init", VolumeMounts: []corev1.VolumeMount{
			{Name: "other", MountPath: "/scratch"},
		}}},
		Containers: []corev1.Container{
			{Name: "a", VolumeMounts: []corev1.VolumeMount{
				{Name: "config", MountPath: "/etc/op/"},
				{Name: "certs", MountPath: "/etc/op/certs"},
				{Name: "host", MountPath: "/data", SubPath: "a"},
			}},
			{Name: "b", VolumeMounts: []corev1.VolumeMount{
				{Name: "config", MountPath: "/etc/op"},
				// The same path as the init container's mount, but another volume: ambiguous.
				{Name: "certs", MountPath: "/scratch"},
			}},
		},
	}}
	dirOf := func(v *corev1.Volume) string {
		if v.HostPath != nil {
			return v.HostPath.Path
		}
		return "/pods/p/volumes/" + v.Name
	}
	want := []mapping{
		{from: "/etc/op/certs", to: "/pods/p/volumes/certs"},
		{from: "/etc/op", to: "/pods/p/volumes/config"},
		{from: "/data", to: "/srv/data/a"},
	}
	got := podMounts(pod, dirOf)
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(mapping{})); diff != "" {
		t.Errorf("podMounts (-want +got):\n%s", diff)
	}
}

func TestRewriteFiles(t *testing.T) {
	maps := []mapping{{from: "/var/run/op/certs", to: "/pods/p/volumes/certs"}, {from: "/etc/op", to: "/pods/p/volumes/config"}}
	files := map[string][]byte{
		"config.yaml": []byte("webhook:\n  certDir: /var/run/op/certs\n  other: /var/run/op/certsx\nfile: /etc/op/x.yaml\n"),
		"blob":        {0xff, 0xfe, '/', 'e', 't', 'c', '/', 'o', 'p'},
	}
	got := rewriteFiles(files, maps)
	want := map[string][]byte{
		"config.yaml": []byte("webhook:\n  certDir: /pods/p/volumes/certs\n  other: /var/run/op/certsx\nfile: /pods/p/volumes/config/x.yaml\n"),
		"blob":        {0xff, 0xfe, '/', 'e', 't', 'c', '/', 'o', 'p'}, // not text: left as is
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rewriteFiles (-want +got):\n%s", diff)
	}
}

func TestWriteFilesLeavesUnchangedFilesAlone(t *testing.T) {
	dir := t.TempDir()
	if err := writeFiles(dir, map[string][]byte{"tls.crt": []byte("one"), "sub/ca.crt": []byte("ca")}); err != nil {
		t.Fatal(err)
	}
	crt := filepath.Join(dir, "tls.crt")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(crt, old, old); err != nil {
		t.Fatal(err)
	}
	if err := writeFiles(dir, map[string][]byte{"tls.crt": []byte("one")}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(crt); err != nil || !fi.ModTime().Equal(old) {
		t.Fatalf("an unchanged file was rewritten (mtime %v, err %v)", fi.ModTime(), err)
	}
	if err := writeFiles(dir, map[string][]byte{"tls.crt": []byte("two")}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(crt)
	if err != nil || string(b) != "two" {
		t.Fatalf("tls.crt = %q, %v; want the new content", b, err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{"sub", "tls.crt"}, names); diff != "" {
		t.Errorf("files left behind (-want +got):\n%s", diff)
	}
}

func TestResyncable(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  corev1.VolumeSource
		want bool
	}{
		{"configMap", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}, true},
		{"secret", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}, true},
		{"projected secret", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{Secret: &corev1.SecretProjection{}}}}}, true},
		{"projected token", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}, {ConfigMap: &corev1.ConfigMapProjection{}},
		}}}, false},
		{"emptyDir", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}, false},
	} {
		if got := resyncable(&corev1.Volume{Name: "v", VolumeSource: tc.src}); got != tc.want {
			t.Errorf("%s: resyncable = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestTokenTTL: a projected volume's tokens are refreshed on the shortest of their lifetimes (an
// hour when the source sets none), and a volume without a token has none.
func TestTokenTTL(t *testing.T) {
	token := func(e *int64) corev1.VolumeProjection {
		return corev1.VolumeProjection{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: e}}
	}
	ten, twenty := int64(600), int64(1200)
	for _, tc := range []struct {
		name      string
		src       corev1.VolumeSource
		want      time.Duration
		wantToken bool
	}{
		{"ten minutes", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{token(&ten)}}}, 10 * time.Minute, true},
		{"the shortest of two", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{token(&twenty), token(&ten)}}}, 10 * time.Minute, true},
		{"the API server's default", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{token(nil)}}}, time.Hour, true},
		{"no token", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{Secret: &corev1.SecretProjection{}}}}}, 0, false},
		{"not projected", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}, 0, false},
	} {
		got, gotToken := tokenTTL(&corev1.Volume{Name: "v", VolumeSource: tc.src})
		if got != tc.want || gotToken != tc.wantToken {
			t.Errorf("%s: tokenTTL = %v, %v; want %v, %v", tc.name, got, gotToken, tc.want, tc.wantToken)
		}
	}
}

func TestHostIPIsNotLoopback(t *testing.T) {
	// The API server rejects loopback addresses in EndpointSlices; HostIP only falls back to
	// 127.0.0.1 on a host with no other IPv4 address.
	ip := HostIP()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var routable []string
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && n.IP.IsGlobalUnicast() {
			routable = append(routable, n.IP.String())
		}
	}
	switch {
	case len(routable) == 0 && ip != "127.0.0.1":
		t.Errorf("HostIP = %s on a host without a routable IPv4 address; want the 127.0.0.1 fallback", ip)
	case len(routable) > 0 && !slices.Contains(routable, ip):
		t.Errorf("HostIP = %s, want one of this host's routable IPv4 addresses %v", ip, routable)
	}
	cfgPath := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(cfgPath, []byte("kubeconfig: k\napiServerPort: 1\nstateDir: /tmp/x\nimages: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if c.NodeIP != ip {
		t.Errorf("default nodeIP = %q, want the host IP %q", c.NodeIP, ip)
	}
	if err := os.WriteFile(cfgPath, []byte("kubeconfig: k\napiServerPort: 1\nstateDir: /tmp/x\nimages: {}\nnodeIP: not-an-ip\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(cfgPath); err == nil {
		t.Error("nodeIP not-an-ip was accepted")
	}
}

func TestSubPath(t *testing.T) {
	vars := map[string]string{"POD": "web-0", "NS": "team-a", "EMPTY": ""}
	for _, tc := range []struct {
		name    string
		mount   corev1.VolumeMount
		want    string
		wantErr bool
	}{
		{name: "none", mount: corev1.VolumeMount{}, want: ""},
		{name: "subPath", mount: corev1.VolumeMount{SubPath: "a/b"}, want: "a/b"},
		{name: "expr", mount: corev1.VolumeMount{SubPathExpr: "$(NS)/$(POD)"}, want: "team-a/web-0"},
		{name: "escaped dollar", mount: corev1.VolumeMount{SubPathExpr: "$$(POD)-$(POD)"}, want: "$(POD)-web-0"},
		{name: "literal", mount: corev1.VolumeMount{SubPathExpr: "logs"}, want: "logs"},
		// The kubelet refuses these rather than mount the whole volume or leave it.
		{name: "unset variable", mount: corev1.VolumeMount{SubPathExpr: "$(NODE)"}, wantErr: true},
		{name: "empty variable", mount: corev1.VolumeMount{SubPathExpr: "x/$(EMPTY)"}, wantErr: true},
		{name: "absolute", mount: corev1.VolumeMount{SubPathExpr: "/$(POD)"}, wantErr: true},
		{name: "backstep", mount: corev1.VolumeMount{SubPathExpr: "../$(POD)"}, wantErr: true},
		{name: "backstep in subPath", mount: corev1.VolumeMount{SubPath: "a/../../b"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := subPath(tc.mount, vars)
			if (err != nil) != tc.wantErr {
				t.Fatalf("subPath(%+v) error = %v, want error %v", tc.mount, err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("subPath(%+v) = %q, want %q", tc.mount, got, tc.want)
			}
		})
	}
}

func TestPodMountsLeaveSubPathExprOut(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Volumes: []corev1.Volume{{Name: "claim", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/claim"}}}},
		Containers: []corev1.Container{{Name: "main", VolumeMounts: []corev1.VolumeMount{
			{Name: "claim", MountPath: "/trace", SubPathExpr: "$(POD)"},
		}}},
	}}
	if got := podMounts(pod, func(v *corev1.Volume) string { return v.HostPath.Path }); len(got) != 0 {
		t.Errorf("podMounts = %v, want none: the directory depends on the container's environment", got)
	}
}
