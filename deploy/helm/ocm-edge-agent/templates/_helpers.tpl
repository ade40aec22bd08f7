{{/*
The release's full name: the release name when it already names the chart (ocm-edge-agent),
else RELEASE-ocm-edge-agent; at most 63 characters, as a Kubernetes name.
*/}}
{{- define "ocm-edge-agent.fullname" -}}
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

{{/* What selects the agent's pod. */}}
{{- define "ocm-edge-agent.selectorLabels" -}}
app.kubernetes.io/name: {{ default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The labels of every object. */}}
{{- define "ocm-edge-agent.labels" -}}
{{ include "ocm-edge-agent.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/component: agent
app.kubernetes.io/part-of: ocm-edge
{{- end -}}

{{- define "ocm-edge-agent.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "ocm-edge-agent.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required with serviceAccount.create=false: the ServiceAccount the agent runs as" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding the join settings. */}}
{{- define "ocm-edge-agent.secretName" -}}
{{- default (include "ocm-edge-agent.fullname" .) .Values.existingSecret -}}
{{- end -}}

{{/*
The join settings as the agent's environment, checked: what is required is there and
looks right (values.schema.json checks the shapes), else the install stops with what to set.
*/}}
{{- define "ocm-edge-agent.settings" -}}
{{- $v := .Values -}}
{{- if not $v.clusterName -}}
{{- fail "clusterName is required: the cluster's name on the hub (or existingSecret, a Secret holding OCM_EDGE_CLUSTER_NAME and the other join settings); `ocm-edge cluster bootstrap NAME -o helm-values` on the hub's machine prints the values" -}}
{{- end -}}
{{- if not $v.broker.url -}}
{{- fail "broker.url is required: the hub's broker as this cluster reaches it, e.g. mqtts://hub.example.net:8883 (or existingSecret)" -}}
{{- end -}}
{{- if and (hasPrefix "mqtts://" $v.broker.url) (not $v.broker.caPin) (not $v.broker.caCert) -}}
{{- fail "broker.caPin or broker.caCert is required with an mqtts:// broker: the `CA pin sha256:...` line `ocm-edge hub` prints, or the broker's CA certificate (PEM)" -}}
{{- end -}}
OCM_EDGE_CLUSTER_NAME: {{ $v.clusterName | quote }}
OCM_EDGE_BROKER: {{ $v.broker.url | quote }}
{{- with $v.broker.caPin }}
OCM_EDGE_BROKER_CA_PIN: {{ . | quote }}
{{- end }}
{{- with $v.broker.hubCaPin }}
OCM_EDGE_HUB_CA_PIN: {{ . | quote }}
{{- end }}
{{- with $v.joinToken }}
OCM_EDGE_JOIN_TOKEN: {{ . | quote }}
{{- end }}
{{- with $v.broker.mtlsUrl }}
OCM_EDGE_BROKER_MTLS: {{ . | quote }}
{{- end }}
{{- with $v.broker.username }}
OCM_EDGE_BROKER_USERNAME: {{ . | quote }}
{{- end }}
{{- with $v.broker.password }}
OCM_EDGE_BROKER_PASSWORD: {{ . | quote }}
{{- end }}
{{- end -}}

{{/* `key=value,...` of a map, sorted, as the agent's list variables take them. */}}
{{- define "ocm-edge-agent.pairs" -}}
{{- $pairs := list -}}
{{- range $key, $value := . -}}
{{- $pairs = append $pairs (printf "%s=%s" $key $value) -}}
{{- end -}}
{{- join "," $pairs -}}
{{- end -}}
