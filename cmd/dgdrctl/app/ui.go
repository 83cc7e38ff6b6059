package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	"github.com/dgdr-operator/dgdr-operator/internal/ui"
)

type uiOptions struct {
	port          int
	address       string
	allNamespaces bool
	open          bool
	// calibrationNamespace and minObservations locate and read the calibration profile; each is
	// read from the operator's configuration in the cluster unless set (operatorNamespace: where
	// that configuration is).
	calibrationNamespace string
	minObservations      int32
	operatorNamespace    string
	calibrationFlagsSet  struct{ namespace, minObservations bool }
}

func newUICommand() *cobra.Command {
	var kf kubeFlags
	o := &uiOptions{}
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve a local web view of requests, Runs and candidates (Pareto front, promote)",
		Long: `ui serves a web view on this machine (127.0.0.1) with your own kubeconfig credentials: it
shows and does exactly what you may. Pages: the requests (live), a request's Runs (progress,
the effective AISimulate input, a diff between two Runs), a Run's candidates (every feasible
evaluated point against the Pareto front, the ranked table) and a candidate (its rendered
DynamoGraphDeployment, promote with a dry-run preview, as dgdrctl promote). It prints its URL
and serves until interrupted. The Calibration page shows a namespace's calibration profile
(--calibration-namespace, by default --namespace's), its corrections counted as used from the
operator configuration's calibration.minObservations, read from the cluster as dgdrctl
calibration show reads it (--min-observations overrides it). See docs/guide/ui.md.

The URL carries a one-time secret: the first browser that opens it gets the session cookie, and
every other request (another browser, another local user, a page of another site) gets 401. To
open the UI in a second browser, restart dgdrctl ui.

It listens on a loopback address only, unless --address names another one explicitly.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			explicit := cmd.Flags().Changed("address")
			if o.allNamespaces && cmd.Flags().Changed("namespace") {
				return errors.New("--namespace and --all-namespaces exclude each other")
			}
			o.calibrationFlagsSet.namespace = cmd.Flags().Changed("calibration-namespace")
			o.calibrationFlagsSet.minObservations = cmd.Flags().Changed("min-observations")
			return runUI(cmd.Context(), &kf, o, explicit, cmd.OutOrStdout())
		},
	}
	kf.add(cmd)
	cmd.Flags().IntVar(&o.port, "port", 0, "port to listen on (0: a free port)")
	cmd.Flags().StringVar(&o.address, "address", "127.0.0.1", "address to listen on; a non-loopback address must be given explicitly")
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "show the requests of every namespace you may list")
	cmd.Flags().BoolVar(&o.open, "open", false, "open the URL in a browser")
	cmd.Flags().StringVar(&o.calibrationNamespace, "calibration-namespace", "", "the namespace whose calibration profile the Calibration page shows (default: the namespace of --namespace or the kubeconfig)")
	cmd.Flags().Int32Var(&o.minObservations, "min-observations", config.DefaultMinObservations, "observations a correction needs before searches use it (default: the operator configuration's calibration.minObservations; this value when that configuration cannot be read)")
	cmd.Flags().StringVar(&o.operatorNamespace, "operator-namespace", "", "the operator's namespace, where its configuration is (default: found by its label in any namespace you may list ConfigMaps of, else "+DefaultOperatorNamespace+")")
	return cmd
}

func runUI(ctx context.Context, kf *kubeFlags, o *uiOptions, explicit bool, out io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	cfg, ns, err := kf.load()
	if err != nil {
		return err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return err
	}
	if o.calibrationNamespace == "" {
		o.calibrationNamespace = ns
	}
	if o.allNamespaces {
		ns = ""
	}
	addr := net.JoinHostPort(o.address, strconv.Itoa(o.port))
	if err := ui.CheckBind(addr, explicit); err != nil {
		return err
	}
	if !o.calibrationFlagsSet.minObservations {
		oc, err := findOperatorCalibration(ctx, c, o.operatorNamespace)
		if err != nil {
			fmt.Fprintf(out, "warning: %v; the Calibration page counts corrections used from %d observations\n", err, o.minObservations)
		} else {
			o.minObservations = oc.MinObservations
		}
	}
	srv, err := ui.New(ui.Options{Client: c, Namespace: ns, CalibrationNamespace: o.calibrationNamespace, MinObservations: o.minObservations})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	srv.Allow(ln.Addr().String())
	if explicit {
		// The Host header names the address the user was given: the explicit address as typed
		// (a host name, too) and, for an unspecified address (0.0.0.0, ::), this machine's
		// interface addresses and host name.
		srv.Allow(net.JoinHostPort(o.address, strconv.Itoa(port)))
		if ip := net.ParseIP(o.address); ip != nil && ip.IsUnspecified() {
			if addrs, err := net.InterfaceAddrs(); err == nil {
				for _, a := range addrs {
					if n, ok := a.(*net.IPNet); ok {
						srv.Allow(net.JoinHostPort(n.IP.String(), strconv.Itoa(port)))
					}
				}
			}
			if h, err := os.Hostname(); err == nil {
				srv.Allow(net.JoinHostPort(h, strconv.Itoa(port)))
			}
		}
	}
	host := o.address
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		host = "127.0.0.1"
	}
	url := srv.LoginURL("http://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/")
	scope := "namespace " + ns
	if ns == "" {
		scope = "all namespaces"
	}
	fmt.Fprintf(out, "dgdrctl ui: serving %s at %s (Ctrl-C to stop)\n", scope, url)
	fmt.Fprintln(out, "The URL holds a one-time secret: the first browser to open it gets the session; keep it to yourself.")
	if explicit {
		if h, _, _ := net.SplitHostPort(addr); !isLoopbackHost(h) {
			fmt.Fprintf(out, "warning: listening on %s, beyond this machine, over plain HTTP (no TLS). Whoever on the network obtains "+
				"the URL before you open it, or sees your traffic afterwards (the URL, the session cookie, every page), reads what "+
				"your credentials may read and promotes candidates with them until dgdrctl ui stops.\n", addr)
		}
	}
	if o.open {
		openBrowser(url)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		return nil
	}
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func openBrowser(url string) {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	_ = exec.Command(name, url).Start()
}
