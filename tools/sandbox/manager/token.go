package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clientauthv1 "k8s.io/client-go/pkg/apis/clientauthentication/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// TokenLifetime is the lifetime of the ServiceAccount tokens the sandbox's processes (the
// operator, the DGD realizer) authenticate with; they are renewed at tokenRenewFraction of it,
// as a kubelet renews a projected token at 80% of its life.
const (
	TokenLifetime      = 15 * time.Minute
	tokenRenewFraction = 0.8
)

// OperatorKubeconfigPath is the kubeconfig the operator runs with: its chart ServiceAccount.
func OperatorKubeconfigPath(root string) string {
	return filepath.Join(StateDir(root), "operator.kubeconfig")
}

// writeServiceAccountKubeconfig writes a kubeconfig for ServiceAccount namespace/name to path:
// the admin kubeconfig's cluster, and a user whose token `dgdr-sandbox token` (self) requests
// with the admin kubeconfig. client-go runs that command again when the credential it printed
// expires, so the process always holds a fresh token of that ServiceAccount and nothing else.
func writeServiceAccountKubeconfig(path, adminKubeconfig, self, namespace, name string) error {
	admin, err := clientcmd.LoadFromFile(adminKubeconfig)
	if err != nil {
		return err
	}
	ctx := admin.Contexts[admin.CurrentContext]
	if ctx == nil || admin.Clusters[ctx.Cluster] == nil {
		return fmt.Errorf("%s: no current context with a cluster", adminKubeconfig)
	}
	user := "system:serviceaccount:" + namespace + ":" + name
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["sandbox"] = admin.Clusters[ctx.Cluster]
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		APIVersion:      clientauthv1.SchemeGroupVersion.String(),
		Command:         self,
		Args:            []string{"token", "--kubeconfig", adminKubeconfig, "--namespace", namespace, "--service-account", name},
		InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
	}}
	cfg.Contexts[user] = &clientcmdapi.Context{Cluster: "sandbox", AuthInfo: user}
	cfg.CurrentContext = user
	return clientcmd.WriteToFile(*cfg, path)
}

// ExecCredential requests a token of ServiceAccount namespace/name (TokenRequest, with the
// admin kubeconfig) and returns it as a client.authentication.k8s.io/v1 ExecCredential whose
// expiry is tokenRenewFraction of the token's life, so that the client renews it in time.
func ExecCredential(ctx context.Context, adminKubeconfig, namespace, name string) ([]byte, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", adminKubeconfig)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	issued := time.Now()
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(TokenLifetime / time.Second))},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("requesting a token of ServiceAccount %s/%s: %w", namespace, name, err)
	}
	life := tr.Status.ExpirationTimestamp.Sub(issued)
	renewAt := metav1.NewTime(issued.Add(time.Duration(float64(life) * tokenRenewFraction)))
	return json.Marshal(&clientauthv1.ExecCredential{
		TypeMeta: metav1.TypeMeta{APIVersion: clientauthv1.SchemeGroupVersion.String(), Kind: "ExecCredential"},
		Status:   &clientauthv1.ExecCredentialStatus{Token: tr.Status.Token, ExpirationTimestamp: &renewAt},
	})
}
