{{/*
Names, labels and the validation of every value. A failed validation stops rendering with
"workload-report: <value>: <what is wrong>".
*/}}

{{- define "wr.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "wr.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "wr.namespace" -}}
{{- default .Release.Namespace .Values.report.namespace -}}
{{- end -}}

{{- define "wr.selectorLabels" -}}
app.kubernetes.io/name: {{ include "wr.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "wr.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "wr.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: workload-report
{{- end -}}

{{/* The image reference: repository@digest, else repository:tag (tag defaults to appVersion). */}}
{{- define "wr.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The env var (and Secret key) of a team's webhook, called with (list $ team): its
report.config.webhookEnv override, else the team upper-cased, every non-alphanumeric as "_",
then _WEBHOOK (the binary's rule). */}}
{{- define "wr.webhookEnv" -}}
{{- $root := index . 0 -}}
{{- $team := toString (index . 1) -}}
{{- $overrides := $root.Values.report.config.webhookEnv | default dict -}}
{{- if hasKey $overrides $team -}}
{{- toString (get $overrides $team) -}}
{{- else -}}
{{- printf "%s_WEBHOOK" (regexReplaceAll "[^A-Z0-9]" (upper $team) "_") -}}
{{- end -}}
{{- end -}}

{{/* Team names that can receive a message, in config order, the default team first; never `silenced`. */}}
{{- define "wr.postingTeams" -}}
{{- $c := .Values.report.config -}}
{{- $names := list $c.defaultTeam -}}
{{- range $c.teams -}}
{{- if and (ne .name "silenced") (not (has .name $names)) -}}
{{- $names = append $names .name -}}
{{- end -}}
{{- end -}}
{{- toJson $names -}}
{{- end -}}

{{/* API group and resource of each supported workload kind. */}}
{{- define "wr.workloadResources" -}}
{"Deployment": ["apps", "deployments"], "StatefulSet": ["apps", "statefulsets"], "DaemonSet": ["apps", "daemonsets"], "ReplicaSet": ["apps", "replicasets"], "Job": ["batch", "jobs"], "CronJob": ["batch", "cronjobs"]}
{{- end -}}

{{/* "true" when the value is a whole number (YAML and JSON numbers arrive as int64 or float64). */}}
{{- define "wr.isInt" -}}
{{- if or (kindIs "int" .) (kindIs "int64" .) (and (kindIs "float64" .) (eq (floor .) .)) -}}true{{- end -}}
{{- end -}}

{{- define "wr.isHttpUrl" -}}
{{- if regexMatch "^https?://[^\\s/]+[^\\s]*$" . -}}true{{- end -}}
{{- end -}}

{{/* lookback in seconds: "<n>m" or "<n>h". */}}
{{- define "wr.lookbackSeconds" -}}
{{- $l := toString .Values.alerts.lookback -}}
{{- $n := int (trimSuffix "m" (trimSuffix "h" $l)) -}}
{{- if hasSuffix "h" $l -}}{{ mul $n 3600 }}{{- else -}}{{ mul $n 60 }}{{- end -}}
{{- end -}}

{{/* Validation of everything the report needs; called by every template of the report. */}}
{{- define "wr.validateReport" -}}
{{- $r := .Values.report -}}
{{- $c := $r.config -}}
{{- $p := "workload-report" -}}
{{- if not .Values.image.repository -}}
{{- fail (printf "%s: image.repository is required when report.enabled is true" $p) -}}
{{- end -}}
{{- if and .Values.image.digest (not (regexMatch "^sha256:[0-9a-f]{64}$" (toString .Values.image.digest))) -}}
{{- fail (printf "%s: image.digest must be sha256:<64 lower-case hex>, got %q" $p (toString .Values.image.digest)) -}}
{{- end -}}
{{- if not (and (kindIs "string" $r.schedule) (regexMatch "^\\S+( \\S+){4}$" (trim $r.schedule))) -}}
{{- fail (printf "%s: report.schedule is required: a cron expression with 5 fields such as \"30 7 * * 0-4\"" $p) -}}
{{- end -}}
{{- if not $r.webhooksSecret -}}
{{- fail (printf "%s: report.webhooksSecret is required: the name of the Secret holding the <TEAM>_WEBHOOK keys" $p) -}}
{{- end -}}
{{- if not (and (include "wr.isInt" $r.resources.cpuRequestMillicores) (ge (int64 $r.resources.cpuRequestMillicores) 1)) -}}
{{- fail (printf "%s: report.resources.cpuRequestMillicores must be a positive integer, got %q" $p (toString $r.resources.cpuRequestMillicores)) -}}
{{- end -}}
{{- if not $c.cluster -}}
{{- fail (printf "%s: report.config.cluster is required" $p) -}}
{{- end -}}
{{- if not $c.defaultTeam -}}
{{- fail (printf "%s: report.config.defaultTeam is required" $p) -}}
{{- end -}}
{{- if not (kindIs "slice" $c.teams) -}}
{{- fail (printf "%s: report.config.teams must be a list of {name, namespaces}" $p) -}}
{{- end -}}
{{- $teamNames := list (toString $c.defaultTeam) -}}
{{- range $i, $t := $c.teams -}}
{{- if not (kindIs "map" $t) -}}
{{- fail (printf "%s: report.config.teams[%d] must be a map {name, namespaces}" $p $i) -}}
{{- end -}}
{{- $teamNames = append $teamNames (toString $t.name) -}}
{{- if not (and (kindIs "slice" $t.namespaces) $t.namespaces) -}}
{{- fail (printf "%s: report.config.teams[%d].namespaces must be a non-empty list of namespace globs" $p $i) -}}
{{- end -}}
{{- end -}}
{{- $overrides := $c.webhookEnv | default dict -}}
{{- if not (kindIs "map" $overrides) -}}
{{- fail (printf "%s: report.config.webhookEnv must be a map of team name to env var name" $p) -}}
{{- end -}}
{{- range $team, $var := $overrides -}}
{{- if or (eq $team "silenced") (not (has $team $teamNames)) -}}
{{- fail (printf "%s: report.config.webhookEnv.%s: not a team that receives messages" $p $team) -}}
{{- end -}}
{{- if not (regexMatch "^[A-Za-z_][A-Za-z0-9_]*$" (toString $var)) -}}
{{- fail (printf "%s: report.config.webhookEnv.%s: %q is not an env var name every Kubernetes accepts ([A-Za-z_][A-Za-z0-9_]*)" $p $team (toString $var)) -}}
{{- end -}}
{{- end -}}
{{- $envs := dict -}}
{{- range $name := $teamNames -}}
{{- if not (regexMatch "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$" $name) -}}
{{- fail (printf "%s: team name %q is not valid: a letter or digit, then letters, digits, ., - or _ (at most 63)" $p $name) -}}
{{- end -}}
{{- if eq $name "silenced" -}}{{- continue -}}{{- end -}}
{{- $env := include "wr.webhookEnv" (list $ $name) -}}
{{- $other := get $envs $env -}}
{{- if and $other (ne $other $name) -}}
{{- fail (printf "%s: teams %q and %q would share the env var %s" $p $other $name $env) -}}
{{- end -}}
{{- $_ := set $envs $env $name -}}
{{- end -}}
{{- if not (kindIs "slice" $c.constraintKinds) -}}
{{- fail (printf "%s: report.config.constraintKinds must be a list of Constraint kinds, not a %s" $p (kindOf $c.constraintKinds)) -}}
{{- end -}}
{{- if not $c.constraintKinds -}}
{{- fail (printf "%s: report.config.constraintKinds is required: list at least one Constraint kind" $p) -}}
{{- end -}}
{{- range $c.constraintKinds -}}
{{- if not (regexMatch "^[A-Z][A-Za-z0-9]*$" (toString .)) -}}
{{- fail (printf "%s: report.config.constraintKinds: %q is not a Constraint kind (CamelCase letters and digits)" $p (toString .)) -}}
{{- end -}}
{{- end -}}
{{- if not (kindIs "slice" $c.workloadKinds) -}}
{{- fail (printf "%s: report.config.workloadKinds must be a list" $p) -}}
{{- end -}}
{{- $known := include "wr.workloadResources" . | fromJson -}}
{{- range $c.workloadKinds -}}
{{- if not (hasKey $known (toString .)) -}}
{{- fail (printf "%s: report.config.workloadKinds: %q is not one of Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob" $p (toString .)) -}}
{{- end -}}
{{- end -}}
{{- if not (and (include "wr.isInt" $c.maxNamesPerRule) (ge (int64 $c.maxNamesPerRule) 1)) -}}
{{- fail (printf "%s: report.config.maxNamesPerRule must be an integer >= 1, got %q" $p (toString $c.maxNamesPerRule)) -}}
{{- end -}}
{{- if not (and (include "wr.isInt" $c.maxMessageChars) (ge (int64 $c.maxMessageChars) 500)) -}}
{{- fail (printf "%s: report.config.maxMessageChars must be an integer >= 500, got %q" $p (toString $c.maxMessageChars)) -}}
{{- end -}}
{{- range $key := list "postWhenClean" "postOnlyOnChange" -}}
{{- if not (kindIs "bool" (get $c $key)) -}}
{{- fail (printf "%s: report.config.%s must be true or false" $p $key) -}}
{{- end -}}
{{- end -}}
{{- if not (kindIs "bool" $r.dryRun) -}}
{{- fail (printf "%s: report.dryRun must be true or false" $p) -}}
{{- end -}}
{{- range $key := list "dashboardUrl" "readmeUrl" -}}
{{- $u := toString (get $c $key) -}}
{{- if and $u (not (include "wr.isHttpUrl" $u)) -}}
{{- fail (printf "%s: report.config.%s must be an http(s) URL, got %q" $p $key $u) -}}
{{- end -}}
{{- end -}}
{{- if contains "|" (toString $c.dashboardUrl) -}}
{{- fail (printf "%s: report.config.dashboardUrl must not contain \"|\" (it ends a Slack link)" $p) -}}
{{- end -}}
{{- if and $c.loki.url (not (include "wr.isHttpUrl" (toString $c.loki.url))) -}}
{{- fail (printf "%s: report.config.loki.url must be an http(s) URL, got %q" $p (toString $c.loki.url)) -}}
{{- end -}}
{{- if not (regexMatch "^[1-9][0-9]*[smhd]$" (toString $c.loki.lookback)) -}}
{{- fail (printf "%s: report.config.loki.lookback must be a duration > 0 like 14d (<n>s, <n>m, <n>h or <n>d)" $p) -}}
{{- end -}}
{{- if not (regexMatch "^[A-Za-z0-9_.-]+$" (toString $c.loki.job)) -}}
{{- fail (printf "%s: report.config.loki.job is required: letters, digits, ., _ or -" $p) -}}
{{- end -}}
{{- if not (has (toString $c.engine) (list "embedded" "gator" "both")) -}}
{{- fail (printf "%s: report.config.engine must be embedded, gator or both, got %q" $p (toString $c.engine)) -}}
{{- end -}}
{{- $g := $c.gator -}}
{{- if not (regexMatch "^https://[^\\s/@]+([/?#][^\\s]*)?$" (toString $g.url)) -}}
{{- fail (printf "%s: report.config.gator.url must be an https URL without credentials (the binary's pin rule)" $p) -}}
{{- end -}}
{{- if not $g.version -}}
{{- fail (printf "%s: report.config.gator.version is required" $p) -}}
{{- end -}}
{{- if not (contains (toString $g.version) (toString $g.url)) -}}
{{- fail (printf "%s: report.config.gator.url must contain gator.version %q (a mirror may carry it in the file name only)" $p (toString $g.version)) -}}
{{- end -}}
{{- if or $g.sha256 (ne (toString $c.engine) "embedded") -}}
{{- if not (regexMatch "^[0-9a-f]{64}$" (toString $g.sha256)) -}}
{{- fail (printf "%s: report.config.gator.sha256 must be 64 lower-case hex characters (the tarball's sha256), got %q" $p (toString $g.sha256)) -}}
{{- end -}}
{{- end -}}
{{- range $key := list "freshAfter" -}}
{{- if not (regexMatch "^[0-9]+[smh]$" (toString (get $c.audit $key))) -}}
{{- fail (printf "%s: report.config.audit.%s must be a duration like 10m (<n>s, <n>m or <n>h)" $p $key) -}}
{{- end -}}
{{- end -}}
{{- if not (and (include "wr.isInt" $c.audit.tolerance.absolute) (ge (int64 $c.audit.tolerance.absolute) 0)) -}}
{{- fail (printf "%s: report.config.audit.tolerance.absolute must be an integer >= 0" $p) -}}
{{- end -}}
{{- $rel := $c.audit.tolerance.relative -}}
{{- if not (and (or (kindIs "float64" $rel) (include "wr.isInt" $rel)) (ge (float64 $rel) 0.0) (le (float64 $rel) 1.0)) -}}
{{- fail (printf "%s: report.config.audit.tolerance.relative must be a number from 0 to 1, got %v" $p $rel) -}}
{{- end -}}
{{- if not (kindIs "map" $c.categories) -}}
{{- fail (printf "%s: report.config.categories must be a map of rule to [{name, pattern}]" $p) -}}
{{- end -}}
{{- range $rule, $cats := $c.categories -}}
{{- if not (has $rule $c.constraintKinds) -}}
{{- fail (printf "%s: report.config.categories: %q is not one of constraintKinds" $p $rule) -}}
{{- end -}}
{{- end -}}
{{- range $key := list "api" "post" "engine" "query" "push" -}}
{{- if not (regexMatch "^[1-9][0-9]*[smh]$" (toString (get $c.timeouts $key))) -}}
{{- fail (printf "%s: report.config.timeouts.%s must be a duration > 0 like 30s (<n>s, <n>m or <n>h)" $p $key) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Validation of the alert values; called only while the report and its alerts are on. */}}
{{- define "wr.validateAlerts" -}}
{{- $a := .Values.alerts -}}
{{- $p := "workload-report" -}}
{{- if not $a.lokiDatasourceUid -}}
{{- fail (printf "%s: alerts.lokiDatasourceUid is required while the report and its alerts are on" $p) -}}
{{- end -}}
{{- if not $a.prometheusDatasourceUid -}}
{{- fail (printf "%s: alerts.prometheusDatasourceUid is required while the report and its alerts are on (time-of-day gate)" $p) -}}
{{- end -}}
{{- if not (regexMatch "^[1-9][0-9]*[mh]$" (toString $a.lookback)) -}}
{{- fail (printf "%s: alerts.lookback must be a whole number of minutes or hours such as 9h or 540m, got %q" $p (toString $a.lookback)) -}}
{{- end -}}
{{- if not (and (include "wr.isInt" $a.checkFromHour) (ge (int64 $a.checkFromHour) 0)) -}}
{{- fail (printf "%s: alerts.checkFromHour must be an integer hour from 0 to 23, got %q" $p (toString $a.checkFromHour)) -}}
{{- end -}}
{{- if not (and (include "wr.isInt" $a.checkToHour) (ge (int64 $a.checkToHour) 1)) -}}
{{- fail (printf "%s: alerts.checkToHour must be an integer hour from 1 to 24, got %q" $p (toString $a.checkToHour)) -}}
{{- end -}}
{{- if gt (int $a.checkToHour) 24 -}}
{{- fail (printf "%s: alerts.checkToHour must be at most 24, got %d" $p (int $a.checkToHour)) -}}
{{- end -}}
{{- if ge (int $a.checkFromHour) (int $a.checkToHour) -}}
{{- fail (printf "%s: alerts.checkFromHour (%d) must be before alerts.checkToHour (%d)" $p (int $a.checkFromHour) (int $a.checkToHour)) -}}
{{- end -}}
{{- if not (and (kindIs "slice" $a.checkDays) $a.checkDays) -}}
{{- fail (printf "%s: alerts.checkDays must be a non-empty list of weekdays (0 = Sunday ... 6 = Saturday)" $p) -}}
{{- end -}}
{{- range $a.checkDays -}}
{{- if not (and (include "wr.isInt" .) (ge (int64 .) 0) (le (int64 .) 6)) -}}
{{- fail (printf "%s: alerts.checkDays: %q is not a weekday from 0 (Sunday) to 6 (Saturday)" $p (toString .)) -}}
{{- end -}}
{{- end -}}
{{- if not (regexMatch "^[0-9]+[smh]$" (toString $a.for)) -}}
{{- fail (printf "%s: alerts.for must be a duration like 15m, got %q" $p (toString $a.for)) -}}
{{- end -}}
{{- if not (regexMatch "^[1-9][0-9]*[smh]$" (toString $a.interval)) -}}
{{- fail (printf "%s: alerts.interval must be a duration like 1m, got %q" $p (toString $a.interval)) -}}
{{- end -}}
{{- if not (regexMatch "^[A-Za-z_][A-Za-z0-9_]*$" (toString $a.teamLabel)) -}}
{{- fail (printf "%s: alerts.teamLabel must be a label name, got %q" $p (toString $a.teamLabel)) -}}
{{- end -}}
{{- if not (trim (toString $a.folder)) -}}
{{- fail (printf "%s: alerts.folder is required" $p) -}}
{{- end -}}
{{- if not (regexMatch "^([A-Za-z0-9][-A-Za-z0-9_.]*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$" (toString $a.sidecarLabel)) -}}
{{- fail (printf "%s: alerts.sidecarLabel must be a Kubernetes label name, got %q" $p (toString $a.sidecarLabel)) -}}
{{- end -}}
{{- end -}}

{{/* Validation of the dashboard values. */}}
{{- define "wr.validateDashboard" -}}
{{- $d := .Values.dashboard -}}
{{- $p := "workload-report" -}}
{{- if not (trim (toString $d.namespace)) -}}
{{- fail (printf "%s: dashboard.namespace is required when dashboard.enabled is true: the namespace Grafana's dashboard sidecar watches" $p) -}}
{{- end -}}
{{- if not (trim (toString $d.folder)) -}}
{{- fail (printf "%s: dashboard.folder must not be blank" $p) -}}
{{- end -}}
{{- if not (regexMatch "^([A-Za-z0-9][-A-Za-z0-9_.]*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$" (toString $d.sidecarLabel)) -}}
{{- fail (printf "%s: dashboard.sidecarLabel must be a Kubernetes label name, got %q" $p (toString $d.sidecarLabel)) -}}
{{- end -}}
{{- if not (regexMatch "^([A-Za-z0-9][-A-Za-z0-9_.]*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$" (toString $d.folderAnnotation)) -}}
{{- fail (printf "%s: dashboard.folderAnnotation must be a Kubernetes annotation name, got %q" $p (toString $d.folderAnnotation)) -}}
{{- end -}}
{{- if not (regexMatch "^[A-Za-z0-9_-]{1,40}$" (toString $d.uid)) -}}
{{- fail (printf "%s: dashboard.uid must be 1 to 40 letters, digits, - or _" $p) -}}
{{- end -}}
{{- if not (regexMatch "^[A-Za-z0-9_.-]+$" (toString .Values.report.config.loki.job)) -}}
{{- fail (printf "%s: report.config.loki.job is required by the dashboard: letters, digits, ., _ or -" $p) -}}
{{- end -}}
{{- if not (regexMatch "^\\{.*\\S.*\\}$" (toString $d.gatekeeperLogSelector)) -}}
{{- fail (printf "%s: dashboard.gatekeeperLogSelector must be a Loki stream selector like {namespace=\"gatekeeper-system\"}, got %q" $p (toString $d.gatekeeperLogSelector)) -}}
{{- end -}}
{{- if not (kindIs "slice" $d.namespaces) -}}
{{- fail (printf "%s: dashboard.namespaces must be a list of namespace names" $p) -}}
{{- end -}}
{{- end -}}
