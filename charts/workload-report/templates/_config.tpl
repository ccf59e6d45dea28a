{{/*
The report config file (`workload-report run --config`), built as a dict so every string is quoted
correctly. Teams keep their order (first match wins); empty optional values are left out.
*/}}
{{- define "wr.config" -}}
{{- $c := .Values.report.config -}}
{{- $teams := list -}}
{{- range $c.teams -}}
{{- $globs := list -}}
{{- range .namespaces -}}{{- $globs = append $globs (toString .) -}}{{- end -}}
{{- $teams = append $teams (dict "name" (toString .name) "namespaces" $globs) -}}
{{- end -}}
{{- $kinds := list -}}
{{- range $c.constraintKinds -}}{{- $kinds = append $kinds (toString .) -}}{{- end -}}
{{- $workloads := list -}}
{{- range $c.workloadKinds -}}{{- $workloads = append $workloads (toString .) -}}{{- end -}}
{{- $cfg := dict
    "cluster" (toString $c.cluster)
    "defaultTeam" (toString $c.defaultTeam)
    "teams" $teams
    "constraintKinds" $kinds
    "workloadKinds" $workloads
    "maxNamesPerRule" (int64 $c.maxNamesPerRule)
    "maxMessageChars" (int64 $c.maxMessageChars)
    "postWhenClean" $c.postWhenClean
    "postOnlyOnChange" $c.postOnlyOnChange
    "engine" (toString $c.engine)
    "audit" (dict
      "freshAfter" (toString $c.audit.freshAfter)
      "tolerance" (dict "absolute" (int64 $c.audit.tolerance.absolute) "relative" (float64 $c.audit.tolerance.relative)))
    "timeouts" (dict "api" (toString $c.timeouts.api) "post" (toString $c.timeouts.post) "engine" (toString $c.timeouts.engine) "query" (toString $c.timeouts.query) "push" (toString $c.timeouts.push))
-}}
{{- range $key := list "dashboardUrl" "readmeUrl" -}}
{{- if get $c $key -}}{{- $_ := set $cfg $key (toString (get $c $key)) -}}{{- end -}}
{{- end -}}
{{- $loki := dict "job" (toString $c.loki.job) "lookback" (toString $c.loki.lookback) -}}
{{- if $c.loki.url -}}{{- $_ := set $loki "url" (toString $c.loki.url) -}}{{- end -}}
{{- if $c.loki.tenant -}}{{- $_ := set $loki "tenant" (toString $c.loki.tenant) -}}{{- end -}}
{{- $_ := set $cfg "loki" $loki -}}
{{- if or (ne (toString $c.engine) "embedded") $c.gator.sha256 $c.gator.path -}}
{{- $gator := dict "version" (toString $c.gator.version) "url" (toString $c.gator.url) "sha256" (toString $c.gator.sha256) -}}
{{- if $c.gator.path -}}{{- $_ := set $gator "path" (toString $c.gator.path) -}}{{- end -}}
{{- $_ := set $cfg "gator" $gator -}}
{{- end -}}
{{- if $c.webhookEnv -}}
{{- $vars := dict -}}
{{- range $team, $var := $c.webhookEnv -}}{{- $_ := set $vars (toString $team) (toString $var) -}}{{- end -}}
{{- $_ := set $cfg "webhookEnv" $vars -}}
{{- end -}}
{{- if $c.categories -}}
{{- $cats := dict -}}
{{- range $rule, $list := $c.categories -}}
{{- $entries := list -}}
{{- range $list -}}{{- $entries = append $entries (dict "name" (toString .name) "pattern" (toString .pattern)) -}}{{- end -}}
{{- $_ := set $cats $rule $entries -}}
{{- end -}}
{{- $_ := set $cfg "categories" $cats -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}
