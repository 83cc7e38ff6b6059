// Package coexistence installs dgdr-operator over a Dynamo platform's own DGDR CRD with stored
// v1beta1 requests, against a real API server, and checks that nothing stored is lost.
package coexistence
