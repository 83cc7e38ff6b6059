package app

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
)

// kubeFlags are the connection flags of the commands that talk to a cluster.
type kubeFlags struct {
	kubeconfig string
	namespace  string
	context    string
}

func (k *kubeFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&k.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	cmd.Flags().StringVarP(&k.namespace, "namespace", "n", "", "namespace (default: the kubeconfig context's namespace)")
	cmd.Flags().StringVar(&k.context, "context", "", "kubeconfig context")
}

// clients are the clients of one command invocation.
type clients struct {
	ctrl      client.Client
	namespace string
}

func (k *kubeFlags) connect() (*clients, error) {
	cfg, ns, err := k.load()
	if err != nil {
		return nil, err
	}
	return newClients(cfg, ns)
}

// load reads the kubeconfig: the REST config and the namespace (--namespace, else the
// context's, else default).
func (k *kubeFlags) load() (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if k.kubeconfig != "" {
		rules.ExplicitPath = k.kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("loading kubeconfig: %w", err)
	}
	ns := k.namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil || ns == "" {
			ns = "default"
		}
	}
	return cfg, ns, nil
}

func newClients(cfg *rest.Config, ns string) (*clients, error) {
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return nil, err
	}
	return &clients{ctrl: c, namespace: ns}, nil
}
