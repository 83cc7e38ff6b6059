// Package verification holds the integration tests of the request controller's verification
// of a deployed candidate, on an API server that serves DynamoGraphDeployments (the Dynamo
// platform's CRD), with the operator running in the test process.
package verification
