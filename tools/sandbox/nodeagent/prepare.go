package nodeagent

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// InClusterTokenDir is the standard in-cluster credentials directory. A container that mounts a
// volume there gets a kubeconfig (KUBECONFIG) that reads the token and CA from that volume's
// directory: rest.InClusterConfig hard-codes this absolute path, which a process cannot see.
const InClusterTokenDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// containerSpec is a container resolved to a local process.
type containerSpec struct {
	name, image       string
	path, argv0       string
	args, env         []string
	workDir           string
	logPath           string
	terminationPath   string
	terminationPolicy corev1.TerminationMessagePolicy
	// readiness runs the container's readiness probe (nil: ready once started).
	readiness *prober
	// memoryLimit is the container's memory limit in bytes (0: none), enforced by watchMemory.
	memoryLimit int64
	// sidecar marks an init container with restartPolicy Always (execute).
	sidecar bool
}

type podSpecs struct {
	init, main []*containerSpec
}

// prepare materializes volumes and resolves containers, retrying (as a kubelet does) until it
// succeeds or the pod is killed. The container statuses say why it waits.
func (r *podRunner) prepare(ctx context.Context, pod *corev1.Pod) (*podSpecs, bool) {
	for {
		specs, reason, err := r.tryPrepare(ctx, pod)
		if err == nil {
			return specs, true
		}
		r.logf("%s: %v", reason, err)
		r.mu.Lock()
		for i := range r.status.ContainerStatuses {
			r.status.ContainerStatuses[i].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: err.Error()}}
		}
		r.mu.Unlock()
		r.publish(ctx)
		select {
		case <-r.killCh:
			return nil, false
		case <-ctx.Done():
			return nil, false
		case <-time.After(2 * time.Second):
		}
		pod = r.snapshot()
	}
}

func (r *podRunner) tryPrepare(ctx context.Context, pod *corev1.Pod) (*podSpecs, string, error) {
	for _, d := range []string{"volumes", "logs", "termination", "bin", "pids", "home", "tmp"} {
		if err := os.MkdirAll(filepath.Join(r.dir, d), 0o755); err != nil {
			return nil, "CreateContainerError", err
		}
	}
	r.mounts = podMounts(pod, r.volumeDir)
	vols := map[string]string{}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		dir, err := r.materialize(ctx, pod, v)
		if err != nil {
			return nil, "ContainerCreating", fmt.Errorf("volume %q: %w", v.Name, err)
		}
		vols[v.Name] = dir
	}
	specs := &podSpecs{}
	for _, list := range []struct {
		in  []corev1.Container
		out *[]*containerSpec
	}{{pod.Spec.InitContainers, &specs.init}, {pod.Spec.Containers, &specs.main}} {
		for i := range list.in {
			s, reason, err := r.resolve(ctx, pod, &list.in[i], vols)
			if err != nil {
				return nil, reason, fmt.Errorf("container %q: %w", list.in[i].Name, err)
			}
			*list.out = append(*list.out, s)
		}
	}
	return specs, "", nil
}

// volumeDir is where a volume lives on the host.
func (r *podRunner) volumeDir(v *corev1.Volume) string {
	if v.HostPath != nil {
		return v.HostPath.Path
	}
	return filepath.Join(r.dir, "volumes", v.Name)
}

// podMounts maps every path at which a container of the pod mounts a volume to that volume's
// host directory (longest first). A path that two containers mount differently is left out:
// a file shared by both could not name it for both.
func podMounts(pod *corev1.Pod, dirOf func(*corev1.Volume) string) []mapping {
	dirs := map[string]string{}
	for i := range pod.Spec.Volumes {
		dirs[pod.Spec.Volumes[i].Name] = dirOf(&pod.Spec.Volumes[i])
	}
	seen := map[string]string{}
	conflict := map[string]bool{}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			for _, m := range c.VolumeMounts {
				dir, ok := dirs[m.Name]
				// A subPathExpr names a directory per container environment (resolve expands
				// it); ConfigMap files cannot name it for the pod as a whole.
				if !ok || m.SubPathExpr != "" {
					continue
				}
				if m.SubPath != "" {
					dir = filepath.Join(dir, m.SubPath)
				}
				from := filepath.Clean(m.MountPath)
				if prev, ok := seen[from]; ok && prev != dir {
					conflict[from] = true
				}
				seen[from] = dir
			}
		}
	}
	var maps []mapping
	for from, to := range seen {
		if !conflict[from] {
			maps = append(maps, mapping{from: from, to: to})
		}
	}
	slices.SortFunc(maps, func(a, b mapping) int {
		return cmp.Or(cmp.Compare(len(b.from), len(a.from)), strings.Compare(a.from, b.from))
	})
	return maps
}

// rewriteFiles rewrites the container paths in the text files of a ConfigMap volume, so that a
// configuration file naming a mounted path (the operator's webhook.certDir) works on the host.
func rewriteFiles(files map[string][]byte, maps []mapping) map[string][]byte {
	for k, b := range files {
		if utf8.Valid(b) {
			files[k] = []byte(rewrite(string(b), maps))
		}
	}
	return files
}

// resyncable says whether a volume's contents come from API objects that may change while the
// pod runs. Projected service-account tokens are refreshed on their own schedule (tokenTTL).
func resyncable(v *corev1.Volume) bool {
	switch {
	case v.ConfigMap != nil, v.Secret != nil:
		return true
	case v.Projected != nil:
		if _, token := tokenTTL(v); token {
			return false
		}
		return true
	}
	return false
}

// defaultTokenTTL is the lifetime the API server gives a TokenRequest without expirationSeconds.
const defaultTokenTTL = time.Hour

// tokenTTL is the shortest lifetime of the service-account tokens a projected volume holds, and
// whether it holds one.
func tokenTTL(v *corev1.Volume) (time.Duration, bool) {
	if v.Projected == nil {
		return 0, false
	}
	var ttl time.Duration
	found := false
	for _, src := range v.Projected.Sources {
		if src.ServiceAccountToken == nil {
			continue
		}
		d := defaultTokenTTL
		if e := src.ServiceAccountToken.ExpirationSeconds; e != nil {
			d = time.Duration(*e) * time.Second
		}
		if !found || d < ttl {
			ttl = d
		}
		found = true
	}
	return ttl, found
}

// resync re-projects the pod's ConfigMap and Secret volumes every period until ctx ends, as the
// kubelet does: a Secret created or rotated after the pod started (a webhook certificate the
// operator issues itself) shows up in the running pod's volume. A projected service-account
// token is requested again once 80% of its lifetime has passed, as the kubelet does, so a
// container that runs longer than its token (a search of the real AISimulate) keeps a valid one.
func (r *podRunner) resync(ctx context.Context, pod *corev1.Pod, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	issued := map[string]time.Time{}
	start := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for i := range pod.Spec.Volumes {
			v := &pod.Spec.Volumes[i]
			refresh := resyncable(v)
			if ttl, token := tokenTTL(v); token {
				last, ok := issued[v.Name]
				if !ok {
					last = start
				}
				if time.Since(last) >= ttl*4/5 {
					refresh = true
					issued[v.Name] = time.Now()
				}
			}
			if !refresh {
				continue
			}
			if _, err := r.materialize(ctx, pod, v); err != nil && ctx.Err() == nil {
				r.logf("resyncing volume %q: %v", v.Name, err)
			}
		}
	}
}

// materialize creates a volume's directory and writes its contents.
func (r *podRunner) materialize(ctx context.Context, pod *corev1.Pod, v *corev1.Volume) (string, error) {
	dir := r.volumeDir(v)
	switch {
	case v.EmptyDir != nil:
		return dir, os.MkdirAll(dir, 0o777)
	case v.HostPath != nil:
		return dir, nil
	case v.ConfigMap != nil:
		files, err := r.configMapFiles(ctx, pod.Namespace, v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.Optional)
		if err != nil {
			return "", err
		}
		return dir, writeFiles(dir, rewriteFiles(files, r.mounts))
	case v.Secret != nil:
		files, err := r.secretFiles(ctx, pod.Namespace, v.Secret.SecretName, v.Secret.Items, v.Secret.Optional)
		if err != nil {
			return "", err
		}
		return dir, writeFiles(dir, files)
	case v.DownwardAPI != nil:
		files, err := downwardFiles(pod, r.a.cfg.NodeIP, v.DownwardAPI.Items)
		if err != nil {
			return "", err
		}
		return dir, writeFiles(dir, files)
	case v.Projected != nil:
		files := map[string][]byte{}
		for _, src := range v.Projected.Sources {
			var part map[string][]byte
			var err error
			switch {
			case src.ServiceAccountToken != nil:
				part, err = r.tokenFile(ctx, pod, src.ServiceAccountToken)
			case src.ConfigMap != nil:
				part, err = r.configMapFiles(ctx, pod.Namespace, src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.Optional)
			case src.Secret != nil:
				part, err = r.secretFiles(ctx, pod.Namespace, src.Secret.Name, src.Secret.Items, src.Secret.Optional)
			case src.DownwardAPI != nil:
				part, err = downwardFiles(pod, r.a.cfg.NodeIP, src.DownwardAPI.Items)
			default:
				err = fmt.Errorf("unsupported projected source")
			}
			if err != nil {
				return "", err
			}
			for k, b := range part {
				files[k] = b
			}
		}
		return dir, writeFiles(dir, files)
	case v.PersistentVolumeClaim != nil:
		return dir, r.claimDir(ctx, pod.Namespace, v.PersistentVolumeClaim.ClaimName, dir)
	default:
		return "", fmt.Errorf("volume type not supported by the sandbox node agent")
	}
}

// claimDir makes dir a link to the host directory of a bound claim's volume, as the kubelet
// mounts it: the sandbox serves claims bound to hostPath or local PersistentVolumes (a test
// creates the volume and the claim; the real PersistentVolume controller binds them).
func (r *podRunner) claimDir(ctx context.Context, ns, claim, dir string) error {
	pvc, err := r.a.cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("persistentvolumeclaim %q: %w", claim, err)
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
		return fmt.Errorf("persistentvolumeclaim %q is not bound", claim)
	}
	pv, err := r.a.cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("persistentvolume %q: %w", pvc.Spec.VolumeName, err)
	}
	var host string
	switch {
	case pv.Spec.HostPath != nil:
		host = pv.Spec.HostPath.Path
	case pv.Spec.Local != nil:
		host = pv.Spec.Local.Path
	default:
		return fmt.Errorf("persistentvolume %q: only hostPath and local volumes are served by the sandbox node agent", pv.Name)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o777); err != nil {
		return err
	}
	if target, err := os.Readlink(dir); err == nil && target == host {
		return nil
	}
	_ = os.RemoveAll(dir)
	return os.Symlink(host, dir)
}

func writeFiles(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for p, b := range files {
		full := filepath.Join(dir, filepath.Clean("/"+p))
		if old, err := os.ReadFile(full); err == nil && bytes.Equal(old, b) {
			continue // unchanged: no write, so file watchers see no event
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		// Write and rename: a process reading the file never sees it half-written.
		tmp, err := os.CreateTemp(filepath.Dir(full), ".tmp-"+filepath.Base(full)+"-")
		if err != nil {
			return err
		}
		_, werr := tmp.Write(b)
		cerr := tmp.Close()
		if err := errors.Join(werr, cerr, os.Chmod(tmp.Name(), 0o644)); err != nil {
			_ = os.Remove(tmp.Name())
			return err
		}
		if err := os.Rename(tmp.Name(), full); err != nil {
			_ = os.Remove(tmp.Name())
			return err
		}
	}
	return nil
}

func selectKeys(data map[string][]byte, items []corev1.KeyToPath) (map[string][]byte, error) {
	out := map[string][]byte{}
	if len(items) == 0 {
		for k, v := range data {
			out[k] = v
		}
		return out, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			return nil, fmt.Errorf("key %q not found", it.Key)
		}
		out[it.Path] = v
	}
	return out, nil
}

func (r *podRunner) configMapFiles(ctx context.Context, ns, name string, items []corev1.KeyToPath, optional *bool) (map[string][]byte, error) {
	cm, err := r.a.cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && optional != nil && *optional {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("configmap %q: %w", name, err)
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return selectKeys(data, items)
}

func (r *podRunner) secretFiles(ctx context.Context, ns, name string, items []corev1.KeyToPath, optional *bool) (map[string][]byte, error) {
	s, err := r.a.cs.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && optional != nil && *optional {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("secret %q: %w", name, err)
	}
	return selectKeys(s.Data, items)
}

// tokenFile asks the API server for a token of the pod's service account, bound to the pod
// (TokenRequest), as the kubelet does for a projected serviceAccountToken source.
func (r *podRunner) tokenFile(ctx context.Context, pod *corev1.Pod, src *corev1.ServiceAccountTokenProjection) (map[string][]byte, error) {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: src.ExpirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if src.Audience != "" {
		tr.Spec.Audiences = []string{src.Audience}
	}
	out, err := r.a.node.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, tr, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for service account %q: %w", sa, err)
	}
	return map[string][]byte{src.Path: []byte(out.Status.Token)}, nil
}

func downwardFiles(pod *corev1.Pod, ip string, items []corev1.DownwardAPIVolumeFile) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, it := range items {
		if it.FieldRef == nil {
			return nil, fmt.Errorf("downward API item %q: only fieldRef is supported", it.Path)
		}
		v, err := fieldValue(pod, ip, it.FieldRef.FieldPath)
		if err != nil {
			return nil, err
		}
		out[it.Path] = []byte(v)
	}
	return out, nil
}

// fieldValue resolves a downward API field path; ip is the node's (and so every pod's) address.
func fieldValue(pod *corev1.Pod, ip, path string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.hostIP", "status.podIPs", "status.hostIPs":
		return ip, nil
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels": pod.Labels, "metadata.annotations": pod.Annotations} {
		if path == prefix {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			var b strings.Builder
			for _, k := range keys {
				fmt.Fprintf(&b, "%s=%q\n", k, m[k])
			}
			return b.String(), nil
		}
		if strings.HasPrefix(path, prefix+"['") && strings.HasSuffix(path, "']") {
			return m[strings.TrimSuffix(strings.TrimPrefix(path, prefix+"['"), "']")], nil
		}
	}
	return "", fmt.Errorf("unsupported downward API field %q", path)
}

// mapping is one container path → host path rewrite.
type mapping struct{ from, to string }

// resolve turns a container into a process: binary, argv, environment and rewritten paths.
func (r *podRunner) resolve(ctx context.Context, pod *corev1.Pod, c *corev1.Container, vols map[string]string) (*containerSpec, string, error) {
	img, ok := r.a.cfg.Images[c.Image]
	if !ok {
		return nil, "ErrImagePull", fmt.Errorf("image %q is not in the sandbox node agent's image map", c.Image)
	}
	command := c.Command
	args := c.Args
	if len(command) == 0 {
		command = img.Entrypoint
	}
	if len(command) == 0 {
		return nil, "CreateContainerError", fmt.Errorf("image %q has no entrypoint and the container no command", c.Image)
	}
	// The pod's PATH directory holds the image's command names as links to the local binary.
	binDir := filepath.Join(r.dir, "bin", c.Name)
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return nil, "CreateContainerError", err
	}
	names := []string{filepath.Base(command[0])}
	if len(img.Entrypoint) > 0 {
		names = append(names, filepath.Base(img.Entrypoint[0]))
	}
	for _, n := range names {
		link := filepath.Join(binDir, n)
		_ = os.Remove(link)
		if err := os.Symlink(img.Binary, link); err != nil {
			return nil, "CreateContainerError", err
		}
	}

	env, err := r.environment(ctx, pod, c)
	if err != nil {
		return nil, "CreateContainerConfigError", err
	}
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}

	// Path mappings: volume mounts, and the termination message path.
	var maps []mapping
	var tokenDir string
	for _, m := range c.VolumeMounts {
		host, ok := vols[m.Name]
		if !ok {
			return nil, "CreateContainerConfigError", fmt.Errorf("volume mount %q has no volume", m.Name)
		}
		sub, err := subPath(m, vars)
		if err != nil {
			return nil, "CreateContainerConfigError", fmt.Errorf("volume mount %q: %w", m.Name, err)
		}
		if sub != "" {
			host = filepath.Join(host, sub)
			_ = os.MkdirAll(host, 0o777)
		}
		maps = append(maps, mapping{from: filepath.Clean(m.MountPath), to: host})
		if filepath.Clean(m.MountPath) == InClusterTokenDir {
			tokenDir = host
		}
	}
	termPath := c.TerminationMessagePath
	if termPath == "" {
		termPath = corev1.TerminationMessagePathDefault
	}
	hostTerm := filepath.Join(r.dir, "termination", c.Name)
	_ = os.WriteFile(hostTerm, nil, 0o666)
	maps = append(maps, mapping{from: termPath, to: hostTerm})
	slices.SortStableFunc(maps, func(a, b mapping) int { return cmp.Compare(len(b.from), len(a.from)) })

	// A volume mounted at /tmp is the container's /tmp, as under a kubelet: programs that put
	// their working files in the temporary directory (the real AISimulate's live ledger) write
	// them into the volume, where other containers of the pod that mount it see them.
	tmp := filepath.Join(r.dir, "tmp")
	for _, m := range maps {
		if m.from == "/tmp" {
			tmp = m.to
		}
	}
	base := []string{
		"PATH=" + binDir + ":/usr/local/bin:/usr/bin:/bin",
		"HOME=" + filepath.Join(r.dir, "home"),
		"TMPDIR=" + tmp,
		"HOSTNAME=" + pod.Name,
		"KUBERNETES_SERVICE_HOST=" + r.a.cfg.APIServerHost,
		"KUBERNETES_SERVICE_PORT=" + strconv.Itoa(r.a.cfg.APIServerPort),
		"KUBERNETES_SERVICE_PORT_HTTPS=" + strconv.Itoa(r.a.cfg.APIServerPort),
		"DGDR_SANDBOX_POD_DIR=" + r.dir,
	}
	for i := range env {
		k, v, _ := strings.Cut(env[i], "=")
		env[i] = k + "=" + rewrite(expand(v, vars), maps)
	}
	full := append(base, env...)
	if tokenDir != "" {
		kc := filepath.Join(r.dir, "kubeconfig-"+c.Name)
		if err := r.writeInClusterKubeconfig(kc, tokenDir); err != nil {
			return nil, "CreateContainerError", err
		}
		full = append(full, "KUBECONFIG="+kc)
	}
	argv := make([]string, 0, len(command)+len(args))
	for _, a := range append(append([]string(nil), command[1:]...), args...) {
		argv = append(argv, rewrite(expand(a, vars), maps))
	}
	path := img.Binary
	if !filepath.IsAbs(command[0]) {
		path = filepath.Join(binDir, filepath.Base(command[0]))
	}
	workDir := filepath.Join(r.dir, "home")
	if c.WorkingDir != "" {
		if w := rewrite(c.WorkingDir, maps); w != c.WorkingDir {
			workDir = w
		}
	}
	return &containerSpec{
		name: c.Name, image: c.Image, path: path, argv0: command[0], args: argv, env: full, workDir: workDir,
		logPath:           filepath.Join(r.dir, "logs", c.Name+".log"),
		terminationPath:   hostTerm,
		terminationPolicy: c.TerminationMessagePolicy,
		readiness:         newProber(c.ReadinessProbe, r.a.cfg.NodeIP, c),
		memoryLimit:       c.Resources.Limits.Memory().Value(),
		sidecar:           c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways,
	}, "", nil
}

// writeInClusterKubeconfig writes the kubeconfig equivalent of in-cluster credentials read
// from the pod's service-account volume directory (token re-read from the file by client-go).
func (r *podRunner) writeInClusterKubeconfig(path, tokenDir string) error {
	ns, _ := os.ReadFile(filepath.Join(tokenDir, "namespace"))
	namespace := strings.TrimSpace(string(ns))
	if namespace == "" {
		namespace = r.namespace
	}
	return os.WriteFile(path, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: in-cluster
  cluster:
    server: https://%s:%d
    certificate-authority: %s
users:
- name: service-account
  user:
    tokenFile: %s
contexts:
- name: in-cluster
  context: {cluster: in-cluster, user: service-account, namespace: %s}
current-context: in-cluster
`, r.a.cfg.APIServerHost, r.a.cfg.APIServerPort, filepath.Join(tokenDir, "ca.crt"), filepath.Join(tokenDir, "token"), namespace)), 0o600)
}

// environment resolves env and envFrom in order ("NAME=value" entries, before rewriting).
func (r *podRunner) environment(ctx context.Context, pod *corev1.Pod, c *corev1.Container) ([]string, error) {
	var out []string
	for _, ef := range c.EnvFrom {
		var data map[string][]byte
		var err error
		switch {
		case ef.ConfigMapRef != nil:
			data, err = r.configMapFiles(ctx, pod.Namespace, ef.ConfigMapRef.Name, nil, ef.ConfigMapRef.Optional)
		case ef.SecretRef != nil:
			data, err = r.secretFiles(ctx, pod.Namespace, ef.SecretRef.Name, nil, ef.SecretRef.Optional)
		}
		if err != nil {
			return nil, err
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			out = append(out, ef.Prefix+k+"="+string(data[k]))
		}
	}
	for _, e := range c.Env {
		v := e.Value
		if s := e.ValueFrom; s != nil {
			var err error
			switch {
			case s.FieldRef != nil:
				v, err = fieldValue(pod, r.a.cfg.NodeIP, s.FieldRef.FieldPath)
			case s.ConfigMapKeyRef != nil:
				var m map[string][]byte
				m, err = r.configMapFiles(ctx, pod.Namespace, s.ConfigMapKeyRef.Name, []corev1.KeyToPath{{Key: s.ConfigMapKeyRef.Key, Path: "v"}}, s.ConfigMapKeyRef.Optional)
				v = string(m["v"])
			case s.SecretKeyRef != nil:
				var m map[string][]byte
				m, err = r.secretFiles(ctx, pod.Namespace, s.SecretKeyRef.Name, []corev1.KeyToPath{{Key: s.SecretKeyRef.Key, Path: "v"}}, s.SecretKeyRef.Optional)
				v = string(m["v"])
			case s.ResourceFieldRef != nil:
				v = resourceValue(c, s.ResourceFieldRef)
			}
			if err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
		}
		out = append(out, e.Name+"="+v)
	}
	return out, nil
}

func resourceValue(c *corev1.Container, ref *corev1.ResourceFieldSelector) string {
	kind, name, _ := strings.Cut(ref.Resource, ".")
	list := c.Resources.Limits
	if kind == "requests" {
		list = c.Resources.Requests
	}
	q, ok := list[corev1.ResourceName(name)]
	if !ok {
		return "0"
	}
	if name == "cpu" {
		return strconv.FormatInt(q.ScaledValue(-3)/1000+boolInt(q.ScaledValue(-3)%1000 != 0), 10)
	}
	return strconv.FormatInt(q.Value(), 10)
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// subPath is the directory of the volume a mount sees: subPath, or subPathExpr expanded from
// the container's environment as the kubelet does. A reference to a variable that is unset or
// empty, an absolute path and a ".." element are errors (the pod waits), so a mount never
// falls back to the whole volume or escapes it.
func subPath(m corev1.VolumeMount, vars map[string]string) (string, error) {
	p := m.SubPath
	if m.SubPathExpr != "" {
		var missing []string
		p = expandWith(m.SubPathExpr, func(name string) (string, bool) {
			v := vars[name]
			if v == "" {
				missing = append(missing, name)
			}
			return v, true
		})
		if len(missing) > 0 {
			return "", fmt.Errorf("subPathExpr %q: missing value for %s", m.SubPathExpr, strings.Join(missing, ", "))
		}
	}
	if p == "" {
		return "", nil
	}
	if filepath.IsAbs(p) {
		return "", fmt.Errorf("subPath %q must not be an absolute path", p)
	}
	if slices.Contains(strings.Split(filepath.ToSlash(p), "/"), "..") {
		return "", fmt.Errorf("subPath %q must not contain '..'", p)
	}
	return p, nil
}

// expand performs Kubernetes $(VAR) expansion ($$ escapes); an unknown reference is kept.
func expand(s string, vars map[string]string) string {
	return expandWith(s, func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	})
}

// expandWith expands $(NAME) with lookup; a name lookup does not know is kept as written.
func expandWith(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// rewrite replaces, in one pass, every container path (longest first) that starts at a path
// boundary in s with its host directory: "--config=/etc/dgdr/input/input.yaml" becomes
// "--config=<pod dir>/volumes/input/input.yaml". maps must be sorted longest first.
func rewrite(s string, maps []mapping) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		matched := false
		if s[i] == '/' && (i == 0 || !isPathChar(s[i-1])) {
			for _, m := range maps {
				if m.from == "/" || !strings.HasPrefix(s[i:], m.from) {
					continue
				}
				end := i + len(m.from)
				if end == len(s) || s[end] == '/' || !isPathChar(s[end]) {
					b.WriteString(m.to)
					i = end
					matched = true
					break
				}
			}
		}
		if !matched {
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

func isPathChar(c byte) bool {
	return c == '/' || c == '.' || c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
