package run

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// foreignObject is the Completion of a Run that finds, under a name the operator would create, an
// object the operator did not make.
func foreignObject(kind string, obj client.Object, consequence string) *Completion {
	return &Completion{Reason: v1beta2.ReasonSearchFailed, Message: fmt.Sprintf(
		"%s %s/%s exists but was not created by the operator (owner references %s, label %s=%q); %s. Delete it and create a new request generation",
		kind, obj.GetNamespace(), obj.GetName(), describeOwners(obj), LabelManagedBy, obj.GetLabels()[LabelManagedBy], consequence)}
}

// describeOwners names an object's owner references for messages.
func describeOwners(obj client.Object) string {
	refs := obj.GetOwnerReferences()
	if len(refs) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(refs))
	for _, ref := range refs {
		parts = append(parts, fmt.Sprintf("%s %s uid %s controller=%t", ref.Kind, ref.Name, ref.UID, ptr.Deref(ref.Controller, false)))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// ownedExactly tells whether obj's owner references are exactly the one the operator gives the
// children of run (runOwnerRef): the Run as controller, and nothing else.
func ownedExactly(obj metav1.Object, run *v1beta2.DynamoGraphDeploymentRun) bool {
	refs := obj.GetOwnerReferences()
	want := runOwnerRef(run)
	return len(refs) == 1 && refs[0].UID == want.UID && refs[0].Kind == want.Kind && refs[0].APIVersion == want.APIVersion &&
		ptr.Deref(refs[0].Controller, false)
}

// madeFor tells whether obj, read from the API server, is one the operator makes for run: owned
// exactly by it, and carrying LabelManagedBy, without which the operator's fence refuses to
// delete it. (The cache holds only Jobs carrying the label, and strips labels.)
func madeFor(obj metav1.Object, run *v1beta2.DynamoGraphDeploymentRun) bool {
	return ownedExactly(obj, run) && obj.GetLabels()[LabelManagedBy] == ManagedByValue
}
