{{/* The release's name prefix, at most 63 characters with a role appended. */}}
{{- define "o2i.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "o2i.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "o2i.labels" -}}
{{ include "o2i.selectorLabels" . }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: o2i
{{- end -}}

{{- define "o2i.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "o2i.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "o2i.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* A variable taken from a key of an existing Secret. */}}
{{- define "o2i.secretEnv" -}}
- name: {{ .env }}
  valueFrom:
    secretKeyRef:
      name: {{ .ref.name }}
      key: {{ .ref.key }}
{{- end -}}

{{/* The secret variables of a role: (dict "root" $ "role" name). The api
takes the read-only S3 keys when they are given. */}}
{{- define "o2i.secretEnvs" -}}
{{- $s := .root.Values.secrets -}}
{{- $api := and (eq .role "api") $s.apiS3AccessKey $s.apiS3SecretKey -}}
{{ include "o2i.secretEnv" (dict "env" "O2I_DATABASE_URL" "ref" $s.databaseURL) }}
{{ include "o2i.secretEnv" (dict "env" "O2I_REDIS_URL" "ref" $s.redisURL) }}
{{ include "o2i.secretEnv" (dict "env" "O2I_S3_ACCESS_KEY" "ref" (ternary $s.apiS3AccessKey $s.s3AccessKey (not (not $api)))) }}
{{ include "o2i.secretEnv" (dict "env" "O2I_S3_SECRET_KEY" "ref" (ternary $s.apiS3SecretKey $s.s3SecretKey (not (not $api)))) }}
{{ include "o2i.secretEnv" (dict "env" "O2I_SMTP_URL" "ref" $s.smtpURL) }}
{{- end -}}
