{{/* Names and labels of dgdr-operator. */}}
{{- define "dgdr-operator.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "dgdr-operator.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "dgdr-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{ include "dgdr-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "dgdr-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "dgdr-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The operator's own ServiceAccount, which the cluster RBAC is bound to: never the
namespace's "default", which every pod without a ServiceAccount of its own runs as. */}}
{{- define "dgdr-operator.serviceAccountName" -}}
{{- $name := .Values.serviceAccount.name }}
{{- if and (not .Values.serviceAccount.create) (not $name) }}
{{- fail "serviceAccount.create=false needs serviceAccount.name: the ServiceAccount the operator runs as and its cluster RBAC is bound to (the chart does not bind it to the namespace's default ServiceAccount)" }}
{{- end }}
{{- if eq $name "default" }}
{{- fail "serviceAccount.name=default is refused: every pod of the namespace without a ServiceAccount of its own runs as default and would hold the operator's cluster RBAC; name a ServiceAccount of the operator's own" }}
{{- end }}
{{- default (include "dgdr-operator.fullname" .) $name }}
{{- end }}

{{- define "dgdr-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- with .Values.image.digest }}@{{ . }}{{ end }}
{{- end }}

{{- define "dgdr-operator.webhookServiceName" -}}
{{- printf "%s-webhook" (include "dgdr-operator.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "dgdr-operator.certSecretName" -}}
{{- printf "%s-webhook-cert" (include "dgdr-operator.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "dgdr-operator.leaderElection" -}}
{{- if kindIs "invalid" .Values.leaderElection.enabled }}
{{- if gt (int .Values.replicaCount) 1 }}true{{ else }}false{{ end }}
{{- else }}
{{- .Values.leaderElection.enabled }}
{{- end }}
{{- end }}

{{/* Annotations of the webhook configurations: CA injection by cert-manager when enabled. */}}
{{- define "dgdr-operator.webhookAnnotations" -}}
{{- if .Values.webhook.certManager.enabled }}
annotations:
  cert-manager.io/inject-ca-from: {{ .Release.Namespace }}/{{ include "dgdr-operator.fullname" . }}-webhook
{{- else }}
annotations: {}
{{- end }}
{{- end }}
