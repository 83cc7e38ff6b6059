package jobcontract

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/modelaccess"
	"github.com/dgdr-operator/dgdr-operator/internal/verification"
)

// OperatorFencePolicyName names the ValidatingAdmissionPolicy (and its binding) that fences
// the operator's own ServiceAccount.
const OperatorFencePolicyName = "dgdr-operator-fence"

// AnnotationAppliedBy is the annotation autoApply puts on every DynamoGraphDeployment it writes
// (promote.AnnotationAppliedBy, repeated here so that this package stays free of promote).
const AnnotationAppliedBy = "nvidia.com/dgdr-applied-by"

// SystemNamespaces are the namespaces the operator never works in, whatever watchNamespaces
// says: the cluster's own.
var SystemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// FenceOptions say whom the fence confines and what its Jobs run: the operator configuration's
// values, which the chart renders into the policy from the same values it renders into the
// configuration.
type FenceOptions struct {
	// Username is the operator's user: system:serviceaccount:<namespace>:<name>.
	Username string
	// PlannerImage is planner.image: the search and baseline containers' image.
	PlannerImage string
	// SearchCommand is planner.command and PlannerArgs planner.args: the search container runs
	// SearchCommand with SearchArgs followed by PlannerArgs.
	SearchCommand, PlannerArgs []string
	// PredictCommand is planner.predictCommand: the baseline container runs it with BaselineArgs.
	PredictCommand []string
	// ReporterImage is reporter.image: the input, reporter and publication containers' image,
	// run with its entrypoint.
	ReporterImage string
	// VerificationImage is verification.image: the verification container's image.
	VerificationImage string
}

// FenceOptionsFor returns the fence of username for the operator configuration cfg (defaulted).
func FenceOptionsFor(username string, cfg *v1alpha1.OperatorConfiguration) FenceOptions {
	return FenceOptions{
		Username:     username,
		PlannerImage: cfg.Planner.Image, SearchCommand: cfg.Planner.Command, PlannerArgs: cfg.Planner.Args,
		PredictCommand: cfg.Planner.PredictCommand, ReporterImage: cfg.Reporter.Image, VerificationImage: cfg.Verification.Image,
	}
}

// OperatorFencePolicy returns the ValidatingAdmissionPolicy and its binding that confine the
// operator's own ServiceAccount to what the operator does, below what its RBAC allows (RBAC
// cannot say which Jobs, which names or which objects to delete):
//
//   - nothing in SystemNamespaces, whatever the operation;
//   - Jobs only of the pod shapes the operator builds: the search pod and a re-search's baseline
//     pod (internal/controller/run BuildJob and BuildBaselineJob: a search identity as
//     ServiceAccount; the input init container, the reporter sidecar, then the search or the
//     baseline container beside the publication container) and the verification pod
//     (internal/verification BuildJob: no ServiceAccount), each container with its configured
//     image, command and arguments, its own environment variable names and mounts, no lifecycle
//     hooks or probes (they run commands of their own), no ServiceAccount token but the search
//     identity's projected one in the reporter and input containers, only the volumes the
//     operator adds (emptyDirs, the trace ConfigMap, claims, that token: no Secret, no hostPath;
//     in the verification pod only its /tmp and the trace source read-only),
//     nothing privileged, no added capabilities, no host namespaces or ports, not as root;
//   - ConfigMaps only named CalibrationConfigMap (a namespace's calibration profile) and
//     carrying the operator's managed-by label;
//   - ServiceAccounts only named SearchIdentityPrefix*, Roles and RoleBindings only named dgdr-*;
//   - DynamoGraphDeployments only carrying AnnotationAppliedBy (autoApply's);
//   - deletes only of what the operator deletes, marked as it marks them (fenceDeletes): its
//     Jobs, search ServiceAccounts and RoleBindings (LabelManagedBy) and Runs (the request's
//     UID label).
//
// It matches creates, updates and deletes by opts.Username only. The chart installs it (rendered
// by hack/chartgen from this function), and the operator holds no right on it: its RBAC names
// only the search-identity policy (docs/operate/security.md), so a compromised operator cannot
// lift its fence.
func OperatorFencePolicy(opts FenceOptions) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	ops := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete}
	rule := func(group string, resources ...string) admissionregistrationv1.NamedRuleWithOperations {
		return admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: ops,
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: resources},
		}}
	}
	forbidden := ptr.To(metav1.StatusReasonForbidden)
	res := "request.resource.resource"
	const prefix = "'the dgdr-operator fence: "
	// Each Job rule holds for a Job written (created or updated) only.
	job := func(expr string) string { return "!variables.job || (" + expr + ")" }
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: OperatorFencePolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{
				rule("batch", "jobs"),
				rule("", "serviceaccounts", "configmaps", "pods"),
				rule("rbac.authorization.k8s.io", "roles", "rolebindings"),
				rule(v1beta2.GroupVersion.Group, "*"),
			}},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name: "operator", Expression: "request.userInfo.username == " + celLiteral(opts.Username),
			}},
			Variables: []admissionregistrationv1.Variable{
				{Name: "plannerImage", Expression: celLiteral(opts.PlannerImage)},
				{Name: "searchCommand", Expression: celLiteral(nonNil(opts.SearchCommand))},
				{Name: "plannerArgs", Expression: celLiteral(nonNil(opts.PlannerArgs))},
				{Name: "predictCommand", Expression: celLiteral(nonNil(opts.PredictCommand))},
				{Name: "reporterImage", Expression: celLiteral(opts.ReporterImage)},
				{Name: "verificationImage", Expression: celLiteral(opts.VerificationImage)},
				{Name: "job", Expression: res + " == 'jobs' && object != null"},
				{Name: "pod", Expression: "object.spec.template.spec"},
				{Name: "searchPod", Expression: "has(variables.pod.serviceAccountName) && variables.pod.serviceAccountName.startsWith('" + SearchIdentityPrefix + "')"},
				{Name: "containers", Expression: "variables.pod.containers + (has(variables.pod.initContainers) ? variables.pod.initContainers : [])"},
			},
			Validations: []admissionregistrationv1.Validation{
				{
					Expression:        "!(request.namespace in " + celLiteral(SystemNamespaces) + ")",
					MessageExpression: prefix + "the operator does not write or delete in namespace ' + request.namespace",
					Reason:            forbidden,
				},
				{
					Expression: "request.operation != 'DELETE' || (oldObject != null && (" + deletable("oldObject") + "))",
					MessageExpression: prefix + "the operator deletes only " + describeDeletes() + ", not ' + " + res +
						" + ' ' + request.namespace + '/' + request.name",
					Reason: forbidden,
				},
				{
					Expression: job("variables.searchPod ? (" + searchPodShape() + ") : (" + verificationPodShape() + ")"),
					MessageExpression: "variables.searchPod ? " + prefix + "a Job of a search identity (ServiceAccount " + SearchIdentityPrefix +
						"*) runs only the operator\\'s search or baseline pod: with the reporter image ' + variables.reporterImage + ' and its entrypoint, init container " +
						InputContainer + " (args " + strings.Join(InputArgs, " ") + "...), then init container " + ReporterContainer +
						" with restartPolicy Always (args " + reporterArgsPrefix[0] + "...); then container " + SearchContainer + " with ' + variables.plannerImage + " +
						"' running ' + variables.searchCommand.join(' ') + ' " + strings.Join(SearchArgs, " ") + " ' + variables.plannerArgs.join(' ') + '" +
						" or container " + BaselineContainer + " with ' + variables.plannerImage + ' running ' + variables.predictCommand.join(' ') + ' " +
						strings.Join(BaselineArgs, " ") + ", beside container " + PublicationContainer + " (args " + strings.Join(PublicationArgs, " ") +
						"); got ' + " + describeContainers() +
						" : " + prefix + "a Job without a " + SearchIdentityPrefix + "* ServiceAccount is the operator\\'s verification Job only: one container " +
						verification.ContainerName + " with ' + variables.verificationImage + ' running " + strings.Join(verification.Command, " ") +
						" -c and the operator\\'s verification program; got ' + " + describeContainers(),
					Reason: forbidden,
				},
				{
					Expression: job("variables.containers.all(c, !has(c.lifecycle) && !has(c.livenessProbe) && !has(c.readinessProbe) && !has(c.startupProbe))"),
					MessageExpression: prefix + "the operator\\'s Jobs run their configured commands only: no lifecycle hooks or probes, refused in ' + " +
						"variables.containers.filter(c, has(c.lifecycle) || has(c.livenessProbe) || has(c.readinessProbe) || has(c.startupProbe)).map(c, c.name).join(', ')",
					Reason: forbidden,
				},
				{
					Expression: job("has(variables.pod.automountServiceAccountToken) && !variables.pod.automountServiceAccountToken && " +
						"(variables.searchPod || !has(variables.pod.serviceAccountName) || variables.pod.serviceAccountName == '')"),
					MessageExpression: prefix + "the operator\\'s Jobs set automountServiceAccountToken: false, and only a search Job names a ServiceAccount (" +
						SearchIdentityPrefix + "*)'",
					Reason: forbidden,
				},
				{
					Expression: job("(variables.searchPod ? " + volumesAllowed(searchVolumes) + " : " + volumesAllowed(verificationVolumes) + ")"),
					MessageExpression: "variables.searchPod ? " + prefix + "a search Job has only the volumes the operator adds (" + describeVolumes(searchVolumes) +
						"; no Secret, no hostPath), not ' + " + refusedVolumes(searchVolumes) +
						" : " + prefix + "a verification Job has only the volumes the operator adds (" + describeVolumes(verificationVolumes) +
						"; no Secret, no hostPath, no ServiceAccount token; the trace only read-only), not ' + " + refusedVolumes(verificationVolumes),
					Reason: forbidden,
				},
				{
					Expression:        job("variables.containers.all(c, " + mountsAllowed("c") + ")"),
					MessageExpression: prefix + "each container of the operator\\'s Jobs mounts only its own volumes at their paths and no devices, not ' + " + refusedMounts(),
					Reason:            forbidden,
				},
				{
					Expression:        job("variables.containers.all(c, " + envsAllowed("c") + ")"),
					MessageExpression: prefix + "each container of the operator\\'s Jobs sets only its own environment variables, no envFrom, and reads a Secret only as " + modelaccess.EnvHFToken + ", not ' + " + refusedEnv(),
					Reason:            forbidden,
				},
				{
					Expression: job("!(has(variables.pod.hostNetwork) && variables.pod.hostNetwork) && !(has(variables.pod.hostPID) && variables.pod.hostPID) && " +
						"!(has(variables.pod.hostIPC) && variables.pod.hostIPC) && variables.containers.all(c, !has(c.ports))"),
					MessageExpression: prefix + "the operator\\'s Jobs use no host network, PID or IPC namespace and no ports'",
					Reason:            forbidden,
				},
				{
					Expression: job(podNonRoot + " && variables.containers.all(c, " + containerLocked("c") + ")"),
					MessageExpression: prefix + "the operator\\'s Jobs run as non-root (pod runAsNonRoot: true) and every container unprivileged, " +
						"with allowPrivilegeEscalation: false and no added capabilities, refused in ' + (((" + podNonRoot + ") ? [] : ['the pod']) + " +
						"variables.containers.filter(c, !(" + containerLocked("c") + ")).map(c, c.name)).join(', ')",
					Reason: forbidden,
				},
				{
					Expression: res + " != 'configmaps' || request.operation == 'DELETE' || (request.name == " + celLiteral(CalibrationConfigMap) +
						" && has(object.metadata.labels) && " + celLiteral(LabelManagedBy) + " in object.metadata.labels && object.metadata.labels[" +
						celLiteral(LabelManagedBy) + "] == " + celLiteral(ManagedByValue) + ")",
					MessageExpression: prefix + "the operator writes only ConfigMaps named " + CalibrationConfigMap + " (a namespace\\'s calibration profile) labelled " +
						LabelManagedBy + "=" + ManagedByValue + ", not ' + request.name",
					Reason: forbidden,
				},
				{
					Expression:        res + " != 'serviceaccounts' || request.name.startsWith('" + SearchIdentityPrefix + "')",
					MessageExpression: prefix + "the operator writes only ServiceAccounts named " + SearchIdentityPrefix + "*, not ' + request.name",
					Reason:            forbidden,
				},
				{
					Expression:        "!(" + res + " in ['roles', 'rolebindings']) || request.name.startsWith('dgdr-')",
					MessageExpression: prefix + "the operator writes only Roles and RoleBindings named dgdr-*, not ' + request.name",
					Reason:            forbidden,
				},
				{
					Expression: res + " != 'dynamographdeployments' || object == null || (has(object.metadata.annotations) && '" + AnnotationAppliedBy + "' in object.metadata.annotations && " +
						"object.metadata.annotations['" + AnnotationAppliedBy + "'] != '')",
					MessageExpression: prefix + "the operator writes only DynamoGraphDeployments carrying " + AnnotationAppliedBy + " (autoApply)'",
					Reason:            forbidden,
				},
			},
		},
	}
	return policy, denyBinding(OperatorFencePolicyName)
}

// fenceDeletes are the resources the operator deletes and the label that marks each of them (any
// value when value is empty). The operator cannot update Jobs, ServiceAccounts or RoleBindings,
// so it cannot mark someone else's to delete them; everything else it never deletes (the garbage
// collector removes what its objects own, as its own identity).
var fenceDeletes = []struct{ resource, kind, label, value string }{
	{"jobs", "Jobs", LabelManagedBy, ManagedByValue},
	{"serviceaccounts", "ServiceAccounts", LabelManagedBy, ManagedByValue},
	{"rolebindings", "RoleBindings", LabelManagedBy, ManagedByValue},
	{"dynamographdeploymentruns", "Runs", v1beta2.LabelRequestUID, ""},
}

// deletable is the CEL expression saying that obj is marked as one the operator deletes.
func deletable(obj string) string {
	parts := make([]string, 0, len(fenceDeletes))
	for _, d := range fenceDeletes {
		value := fmt.Sprintf("%s.metadata.labels[%q] != ''", obj, d.label)
		if d.value != "" {
			value = fmt.Sprintf("%s.metadata.labels[%q] == %q", obj, d.label, d.value)
		}
		parts = append(parts, fmt.Sprintf("(request.resource.resource == %q && has(%s.metadata.labels) && %q in %s.metadata.labels && %s)",
			d.resource, obj, d.label, obj, value))
	}
	return strings.Join(parts, " || ")
}

// describeDeletes says what the operator deletes, for the fence's message.
func describeDeletes() string {
	parts := make([]string, 0, len(fenceDeletes))
	for _, d := range fenceDeletes {
		if d.value != "" {
			parts = append(parts, d.kind+" labelled "+d.label+"="+d.value)
		} else {
			parts = append(parts, d.kind+" labelled "+d.label)
		}
	}
	return strings.Join(parts, ", ")
}

// containerShape is one container the operator builds: its name, the CEL expressions of its
// image and of its command and arguments, the names of its environment variables and its mounts
// (volume name: mount path).
type containerShape struct {
	name, image, run string
	env              []string
	mounts           [][2]string
}

// argsStartWith is the CEL expression saying that the list c.args starts with args.
func argsStartWith(c string, args []string) string {
	parts := []string{fmt.Sprintf("has(%[1]s.args) && size(%[1]s.args) >= %d", c, len(args))}
	for i, a := range args {
		parts = append(parts, fmt.Sprintf("%s.args[%d] == %s", c, i, celLiteral(a)))
	}
	return strings.Join(parts, " && ")
}

// reporterArgsPrefix is what the reporter's arguments start with, in the search pod
// (ReporterArgs) and in the baseline pod (BaselineReporterArgs).
var reporterArgsPrefix = []string{"report"}

// reporterEnv are the reporter's and the input container's environment variables.
var reporterEnv = []string{EnvRunName, EnvRunNamespace, EnvPodName, EnvOutputDir, EnvSearchTmpDir, EnvInputDir,
	EnvInputHash, EnvBaselineInputHash, EnvRuntimeImages, EnvPlannerImage}

// modelEnv are the search and baseline containers' environment variables (internal/modelaccess).
var modelEnv = []string{modelaccess.EnvHFToken, modelaccess.EnvHFHome, modelaccess.EnvHFHubOffline}

// containerShapes are the containers of every pod: the search and baseline pods'
// (internal/controller/run BuildJob, BuildBaselineJob) and the verification pod's
// (internal/verification BuildJob). Names are unique across them; which names a pod may have is
// searchPodShape's and verificationPodShape's.
var containerShapes = []containerShape{
	{
		name: InputContainer, image: "variables.reporterImage", run: "!has(c.command) && " + argsStartWith("c", InputArgs), env: reporterEnv,
		mounts: [][2]string{{InputVolume, InputDir}, {TokenVolume, TokenDir}, {CaptureVolume, CaptureMountDir}, {TraceVolume, aisimulate.TraceMountDir}},
	},
	{
		name: SearchContainer, image: "variables.plannerImage", env: modelEnv,
		run: "has(c.command) && c.command == variables.searchCommand && has(c.args) && c.args == " + celLiteral(SearchArgs) + " + variables.plannerArgs",
		mounts: [][2]string{{InputVolume, InputDir}, {OutputVolume, OutputMountDir}, {TmpVolume, TmpDir},
			{modelaccess.VolumeName, modelaccess.MountPath}, {TraceVolume, aisimulate.TraceMountDir}},
	},
	{
		name: BaselineContainer, image: "variables.plannerImage", env: modelEnv,
		run: "has(c.command) && c.command == variables.predictCommand && has(c.args) && c.args == " + celLiteral(BaselineArgs),
		mounts: [][2]string{{InputVolume, InputDir}, {OutputVolume, OutputMountDir}, {TmpVolume, TmpDir},
			{modelaccess.VolumeName, modelaccess.MountPath}, {TraceVolume, aisimulate.TraceMountDir}},
	},
	{
		name: ReporterContainer, image: "variables.reporterImage", run: "!has(c.command) && " + argsStartWith("c", reporterArgsPrefix), env: reporterEnv,
		mounts: [][2]string{{OutputVolume, OutputMountDir}, {TmpVolume, SearchTmpDir}, {TokenVolume, TokenDir}, {PublicationVolume, PublicationDir}},
	},
	{
		name: PublicationContainer, image: "variables.reporterImage", run: "!has(c.command) && has(c.args) && c.args == " + celLiteral(PublicationArgs),
		mounts: [][2]string{{PublicationVolume, PublicationDir}},
	},
	{
		name: verification.ContainerName, image: "variables.verificationImage", env: verification.EnvNames,
		run:    "has(c.command) && c.command == " + celLiteral(verification.Command) + " && " + argsStartWith("c", []string{"-c", verification.Launcher}),
		mounts: [][2]string{{verification.TmpVolume, verification.TmpDir}, {verification.TraceVolume, aisimulate.TraceMountDir}},
	},
}

// shapeOf is the containerShape named name (one of containerShapes).
func shapeOf(name string) containerShape {
	i := slices.IndexFunc(containerShapes, func(s containerShape) bool { return s.name == name })
	return containerShapes[i]
}

// runs is the CEL expression saying that the container c is the named shape with its image,
// command and arguments.
func runs(name string) string {
	s := shapeOf(name)
	return fmt.Sprintf("(c.name == %q && c.image == %s && %s)", s.name, s.image, s.run)
}

// searchPodShape: the search pod or a re-search's baseline pod, both run by the Run's search
// identity: the input init container, then the reporter as a sidecar (restartPolicy Always),
// then the search or the baseline container beside the publication container.
func searchPodShape() string {
	return "has(variables.pod.initContainers) && size(variables.pod.initContainers) == 2 && " +
		"[variables.pod.initContainers[0]].all(c, " + runs(InputContainer) + " && !has(c.restartPolicy)) && " +
		"[variables.pod.initContainers[1]].all(c, " + runs(ReporterContainer) + " && has(c.restartPolicy) && c.restartPolicy == 'Always') && " +
		"size(variables.pod.containers) == 2 && variables.pod.containers.exists(c, " + runs(PublicationContainer) + ") && " +
		"variables.pod.containers.exists(c, " + runs(SearchContainer) + " || " + runs(BaselineContainer) + ")"
}

// verificationPodShape: the verification container alone.
func verificationPodShape() string {
	return "(!has(variables.pod.initContainers) || size(variables.pod.initContainers) == 0) && size(variables.pod.containers) == 1 && " +
		"variables.pod.containers.all(c, " + runs(verification.ContainerName) + ")"
}

// describeContainers is the CEL expression naming the Job's containers and images (init
// containers last), for messages.
func describeContainers() string {
	return "variables.containers.map(c, c.name + ' (' + c.image + ')').join(', ')"
}

// ofContainer is the CEL expression of the list the container c's shape has (what gives each
// shape's list), empty for a container of no shape.
func ofContainer(c string, list func(containerShape) []string) string {
	expr := "[]"
	for i := len(containerShapes) - 1; i >= 0; i-- {
		s := containerShapes[i]
		expr = fmt.Sprintf("(%s.name == %q ? %s : %s)", c, s.name, celLiteral(nonNil(list(s))), expr)
	}
	return expr
}

// mountOf is the CEL expression of a mount as "volume:path" (a volume name has no colon).
func mountOf(m string) string { return "(" + m + ".name + ':' + " + m + ".mountPath)" }

func shapeMounts(s containerShape) []string {
	out := make([]string, 0, len(s.mounts))
	for _, m := range s.mounts {
		out = append(out, m[0]+":"+m[1])
	}
	return out
}

func shapeEnv(s containerShape) []string { return s.env }

// mountAllowed is the CEL expression saying that the container c's mount m is one of its shape's.
func mountAllowed(c, m string) string { return mountOf(m) + " in " + ofContainer(c, shapeMounts) }

// mountsAllowed is the CEL expression saying that the container c mounts only its shape's
// volumes at their paths, and no block devices.
func mountsAllowed(c string) string {
	return fmt.Sprintf("!has(%[1]s.volumeDevices) && (!has(%[1]s.volumeMounts) || %[1]s.volumeMounts.all(m, %[2]s))", c, mountAllowed(c, "m"))
}

// refusedMounts is the CEL expression naming the mounts mountsAllowed refuses, for messages.
func refusedMounts() string {
	return "variables.containers.filter(c, !(" + mountsAllowed("c") + ")).map(c, c.name + ': ' + " +
		"((has(c.volumeMounts) ? c.volumeMounts.filter(m, !(" + mountAllowed("c", "m") + ")).map(m, m.name + ' at ' + m.mountPath) : []) + " +
		"(has(c.volumeDevices) ? ['volumeDevices'] : [])).join(', ')).join('; ')"
}

// envAllowed is the CEL expression saying that the container c's variable e is one of its
// shape's, and reads a Secret's key only as HF_TOKEN.
func envAllowed(c, e string) string {
	return fmt.Sprintf("%[1]s.name in %[2]s && (!has(%[1]s.valueFrom) || !has(%[1]s.valueFrom.secretKeyRef) || %[1]s.name == %[3]q)",
		e, ofContainer(c, shapeEnv), modelaccess.EnvHFToken)
}

// envsAllowed is the CEL expression saying that the container c sets only its shape's
// environment variables (envAllowed), none from envFrom.
func envsAllowed(c string) string {
	return fmt.Sprintf("!has(%[1]s.envFrom) && (!has(%[1]s.env) || %[1]s.env.all(e, %[2]s))", c, envAllowed(c, "e"))
}

// refusedEnv is the CEL expression naming the variables envsAllowed refuses, for messages.
func refusedEnv() string {
	return "variables.containers.filter(c, !(" + envsAllowed("c") + ")).map(c, c.name + ': ' + " +
		"((has(c.env) ? c.env.filter(e, !(" + envAllowed("c", "e") + ")).map(e, e.name) : []) + (has(c.envFrom) ? ['envFrom'] : [])).join(', ')).join('; ')"
}

// podNonRoot is the CEL expression saying that the pod asks to run as non-root.
const podNonRoot = "has(variables.pod.securityContext) && has(variables.pod.securityContext.runAsNonRoot) && variables.pod.securityContext.runAsNonRoot"

// containerLocked is the CEL expression saying that the container c is unprivileged, cannot
// escalate, adds no capabilities and does not ask to run as root.
func containerLocked(c string) string {
	return fmt.Sprintf("has(%[1]s.securityContext) && !(has(%[1]s.securityContext.privileged) && %[1]s.securityContext.privileged) && "+
		"has(%[1]s.securityContext.allowPrivilegeEscalation) && !%[1]s.securityContext.allowPrivilegeEscalation && "+
		"!(has(%[1]s.securityContext.capabilities) && has(%[1]s.securityContext.capabilities.add) && size(%[1]s.securityContext.capabilities.add) > 0) && "+
		"!(has(%[1]s.securityContext.runAsNonRoot) && !%[1]s.securityContext.runAsNonRoot)", c)
}

// volumeShape is a volume the operator adds: its name and the CEL expression of the sources it
// may have (the API server admits exactly one source per volume before the policy runs).
type volumeShape struct{ name, source string }

// tokenSources: the search identity's token, the cluster's CA and the namespace (podVolumes).
const tokenSources = "has(v.projected) && v.projected.sources.all(s, has(s.serviceAccountToken) || " +
	"(has(s.configMap) && s.configMap.name == 'kube-root-ca.crt') || has(s.downwardAPI))"

// searchVolumes are the search and baseline pods' volumes (internal/controller/run podVolumes,
// traceMount, windowCut; internal/modelaccess Volumes).
var searchVolumes = []volumeShape{
	{InputVolume, "has(v.emptyDir)"}, {OutputVolume, "has(v.emptyDir)"}, {TmpVolume, "has(v.emptyDir)"}, {PublicationVolume, "has(v.emptyDir)"},
	{TraceVolume, "has(v.emptyDir) || has(v.configMap) || has(v.persistentVolumeClaim)"},
	{modelaccess.VolumeName, "has(v.persistentVolumeClaim)"}, {CaptureVolume, "has(v.persistentVolumeClaim)"},
	{TokenVolume, tokenSources},
}

// verificationVolumes are the verification pod's (internal/verification BuildJob): its /tmp and,
// to replay the request's trace, the trace source read-only: one ConfigMap key projected to the
// trace file, or a claim mounted read-only.
var verificationVolumes = []volumeShape{
	{verification.TmpVolume, "has(v.emptyDir)"},
	{verification.TraceVolume, "(has(v.configMap) && has(v.configMap.items) && size(v.configMap.items) == 1 && v.configMap.items[0].path == " +
		celLiteral(aisimulate.TraceConfigMapFile) + ") || (has(v.persistentVolumeClaim) && has(v.persistentVolumeClaim.readOnly) && v.persistentVolumeClaim.readOnly)"},
}

// volumeAllowed is the CEL expression saying that the volume v is one of shapes.
func volumeAllowed(shapes []volumeShape) string {
	parts := make([]string, 0, len(shapes))
	for _, s := range shapes {
		parts = append(parts, fmt.Sprintf("(v.name == %q && (%s))", s.name, s.source))
	}
	return strings.Join(parts, " || ")
}

// volumesAllowed is the CEL expression saying that every volume of the pod is one of shapes.
func volumesAllowed(shapes []volumeShape) string {
	return "(!has(variables.pod.volumes) || variables.pod.volumes.all(v, " + volumeAllowed(shapes) + "))"
}

// refusedVolumes is the CEL expression naming the volumes volumesAllowed refuses, for messages.
func refusedVolumes(shapes []volumeShape) string {
	return "variables.pod.volumes.filter(v, !(" + volumeAllowed(shapes) + ")).map(v, v.name).join(', ')"
}

// describeVolumes names shapes for messages.
func describeVolumes(shapes []volumeShape) string {
	names := make([]string, 0, len(shapes))
	for _, s := range shapes {
		names = append(names, s.name)
	}
	return strings.Join(names, ", ")
}

// celLiteral is v as a CEL literal: JSON strings and lists of strings are CEL literals too.
func celLiteral(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err) // strings and string slices always marshal
	}
	return string(data)
}

// nonNil is s, or an empty list for nil (whose JSON, null, is no CEL list).
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
