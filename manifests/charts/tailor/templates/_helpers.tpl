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

{{/* The pools as TailorArgs takes them: each one without an instanceProfile gets
nodeInstanceProfile. values.schema.json refuses values that leave a pool without either; this
says so again for a render that skipped the schema (--skip-schema-validation). */}}
{{- define "tailor.pools" -}}
{{- $pools := list }}
{{- range $i, $p := .Values.pools }}
{{- $pool := deepCopy $p }}
{{- if not $pool.instanceProfile }}
{{- $msg := printf "pools[%d].instanceProfile: pool %v has no IAM instance profile for its nodes (an instance without one never joins the cluster); set nodeInstanceProfile for every pool, or instanceProfile on this one" $i $pool.name }}
{{- $_ := set $pool "instanceProfile" (required $msg $.Values.nodeInstanceProfile) }}
{{- end }}
{{- $pools = append $pools $pool }}
{{- end }}
{{- toYaml $pools }}
{{- end }}

{{/* The scheduler image: by digest when one is given (a digest names one image for good), else
by tag, the chart's appVersion (its version) unless controller.image.tag is set. */}}
{{- define "tailor.imageTag" -}}
{{- .Values.controller.image.tag | default .Chart.AppVersion | toString }}
{{- end }}
{{- define "tailor.image" -}}
{{- $img := .Values.controller.image }}
{{- if $img.digest }}
{{- printf "%s@%s" $img.repository $img.digest }}
{{- else }}
{{- printf "%s:%s" $img.repository (include "tailor.imageTag" .) }}
{{- end }}
{{- end }}

{{/* The pull policy, unless controller.image.pullPolicy sets one: IfNotPresent for an image that
cannot change under its name, a digest or a release tag (semantic version, v optional, such as
0.1.0 or v0.1.0-3-gabc1234 from git describe, but not a -dirty build of uncommitted changes);
Always for any other tag (dev, latest, a branch, a -dirty build), so a tag pushed again is pulled
again. Always costs a registry round trip per pod start, not a download: layers already on the
node are kept. */}}
{{- define "tailor.imagePullPolicy" -}}
{{- $img := .Values.controller.image }}
{{- $tag := include "tailor.imageTag" . }}
{{- if $img.pullPolicy }}
{{- $img.pullPolicy }}
{{- else if $img.digest }}
{{- "IfNotPresent" }}
{{- else if and (regexMatch `^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$` $tag) (not (hasSuffix "-dirty" $tag)) }}
{{- "IfNotPresent" }}
{{- else }}
{{- "Always" }}
{{- end }}
{{- end }}
