{{/* The chart's name, for labels. */}}
{{- define "tailor.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name of the resources: the release name when it contains the chart's name. */}}
{{- define "tailor.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "tailor.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "tailor.labels" -}}
helm.sh/chart: {{ include "tailor.chart" . }}
{{ include "tailor.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "tailor.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tailor.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "tailor.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "tailor.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name: name the existing service account when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The scheduler's leader-election lease; the controllers' lease name is fixed in the binary. */}}
{{- define "tailor.schedulerLease" -}}tailor-scheduler{{- end }}
{{- define "tailor.controllersLease" -}}tailor-controllers{{- end }}

{{/* Where the ConfigMap's KubeSchedulerConfiguration is mounted. */}}
{{- define "tailor.configDir" -}}/etc/tailor{{- end }}
{{- define "tailor.configFile" -}}scheduler-config.yaml{{- end }}

{{/* A list of affinity terms or spread constraints, each given this release's pods as its
labelSelector unless it has one: (list $ terms). */}}
{{- define "tailor.withSelector" -}}
{{- $root := index . 0 }}
{{- $terms := list }}
{{- range index . 1 }}
{{- $term := deepCopy . }}
{{- if not (hasKey $term "labelSelector") }}
{{- $_ := set $term "labelSelector" (dict "matchLabels" (include "tailor.selectorLabels" $root | fromYaml)) }}
{{- end }}
{{- $terms = append $terms $term }}
{{- end }}
{{- toYaml $terms }}
{{- end }}
