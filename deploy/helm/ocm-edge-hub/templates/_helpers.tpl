{{/*
The release's full name: the release name when it already names the chart (ocm-edge-hub), else
RELEASE-ocm-edge-hub; at most 63 characters, as a Kubernetes name.
*/}}
{{- define "ocm-edge-hub.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* What selects the hub's pod. */}}
{{- define "ocm-edge-hub.selectorLabels" -}}
app.kubernetes.io/name: {{ default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The labels of every object. */}}
{{- define "ocm-edge-hub.labels" -}}
{{ include "ocm-edge-hub.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/component: hub
app.kubernetes.io/part-of: ocm-edge
{{- end -}}
