{{/*
Traces (docs/operations.md, "Traces"): the collector the proxy sends its spans to, the sampler,
and the collector's headers (an API key) from an existing Secret, as env entries; and the checks
the proxy makes of the OpenTelemetry settings at start (checkTracingSettings in
src/telemetry/tracing/settings.ts, on the syntax of src/config/tracing.ts).
*/}}

{{/* tracing as env entries; nothing without tracing.endpoint. */}}
{{- define "ticket-auth-proxy.tracingEnv" -}}
{{- $tracing := (include "ticket-auth-proxy.values" . | fromYaml).tracing | default dict -}}
{{- /* A number, 0 included, or a string (--set gives one): as written. */ -}}
{{- $arg := "" -}}
{{- if not (kindIs "invalid" $tracing.samplerArg) }}{{ $arg = toString $tracing.samplerArg }}{{ end -}}
{{- if not $tracing.endpoint -}}
{{- $alone := list -}}
{{- if $tracing.sampler }}{{ $alone = append $alone "tracing.sampler" }}{{ end -}}
{{- if ne $arg "" }}{{ $alone = append $alone "tracing.samplerArg" }}{{ end -}}
{{- if $tracing.existingSecret }}{{ $alone = append $alone "tracing.existingSecret" }}{{ end -}}
{{- if $alone -}}
{{- include "ticket-auth-proxy.fail" (printf "ticket-auth-proxy: %s %s set without tracing.endpoint: set the collector's URL to send traces, or remove %s" (join " and " $alone) (ternary "are" "is" (gt (len $alone) 1)) (ternary "them" "it" (gt (len $alone) 1))) -}}
{{- end -}}
{{- else }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ $tracing.endpoint | quote }}
{{- with $tracing.sampler }}
- name: OTEL_TRACES_SAMPLER
  value: {{ . | quote }}
{{- end }}
{{- if ne $arg "" }}
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ $arg | quote }}
{{- end }}
{{- if $tracing.existingSecret }}
# The collector's headers from the Secret, never in values; read at start: a rotated key takes a
# restart of the pods.
- name: OTEL_EXPORTER_OTLP_HEADERS
  valueFrom:
    secretKeyRef:
      name: {{ $tracing.existingSecret }}
      key: {{ $tracing.headersKey | default "otlp-headers" }}
{{- end }}
{{- end }}
{{- end -}}

{{/* "true" when the OpenTelemetry key=value,... list parses as parsePairs in
     src/telemetry/tracing/settings.ts parses it: every part that is not blank has a "=" after its
     first character, and its name and value, trimmed, decode. */}}
{{- define "ticket-auth-proxy.pairsParse" -}}
{{- $ok := true -}}
{{- range splitList "," . -}}
{{- if ne (trim .) "" -}}
{{- if not (regexMatch "^[^=]+=" .) -}}
{{- $ok = false -}}
{{- else if not (and (include "ticket-auth-proxy.decodes" (trim (regexReplaceAll "=[\\s\\S]*$" . ""))) (include "ticket-auth-proxy.decodes" (trim (regexReplaceAll "^[^=]*=" . "")))) -}}
{{- $ok = false -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- ternary "true" "" $ok -}}
{{- end -}}

{{/*
A collector's URL as the proxy reads it with the URL parser (the WHATWG URL Standard, for http and
https): any number of slashes or backslashes after the scheme, user information up to the last "@"
of the authority, a host that holds none of the characters a host may not, an IPv4 address in any
of the forms the standard reads (127.1, 0x7f.0.0.1), a port up to 65535. Returns YAML {url: {host,
hostname, http}} (hostname as the parser writes it, host with a port other than the scheme's), or
{problem: true}.
*/}}
{{- define "ticket-auth-proxy.collectorUrl" -}}
{{- $s := . -}}
{{- $re := "(?i)^(https?):[/\\\\]*([^/\\\\?#]*)" -}}
{{- if not (regexMatch $re $s) -}}
{{- dict "problem" true | toYaml -}}
{{- else -}}
{{- $scheme := lower (regexReplaceAll (printf "%s[\\s\\S]*$" $re) $s "${1}") -}}
{{- $authority := regexReplaceAll (printf "%s[\\s\\S]*$" $re) $s "${2}" -}}
{{- $userinfo := regexFind "^[\\s\\S]*@" $authority | trimSuffix "@" -}}
{{- $hostPort := regexReplaceAll "^[\\s\\S]*@" $authority "" -}}
{{- $host := regexReplaceAll "^(\\[[^\\]]*\\]|[^:]*)[\\s\\S]*$" $hostPort "${1}" -}}
{{- $port := trimPrefix ":" (trimPrefix $host $hostPort) -}}
{{- $digits := regexReplaceAll "^0+" $port "" | default "0" -}}
{{- $bad := or (not (has $userinfo (list "" ":"))) (eq $host "") (not (regexMatch "^[0-9]*$" $port)) (gt (len $digits) 5) -}}
{{- if not $bad }}{{ $bad = gt (int64 $digits) 65535 }}{{ end -}}
{{- $hostname := lower $host -}}
{{- if and (not $bad) (hasPrefix "[" $host) -}}
{{- $bad = not (regexMatch "^\\[[0-9a-fA-F:.]+\\]$" $host) -}}
{{- else if not $bad -}}
{{- $bad = not (regexMatch "^([^\\x00-\\x20#/:<>?@\\[\\\\\\]^|%\\x7f]|%[0-9a-fA-F]{2})+$" $host) -}}
{{- /* An IPv4 address when its last label is a number: every label a number then, at most four. */ -}}
{{- $labels := splitList "." $hostname -}}
{{- if and (gt (len $labels) 1) (eq (last $labels) "") }}{{ $labels = initial $labels }}{{ end -}}
{{- if and (not $bad) (regexMatch "^([0-9]+|0x[0-9a-f]*)$" (last $labels)) -}}
{{- $n := len $labels -}}
{{- $powers := list 1 256 65536 16777216 4294967296 -}}
{{- $value := 0 -}}
{{- if gt $n 4 }}{{ $bad = true }}{{ end -}}
{{- range $i, $label := $labels -}}
{{- if or (not (regexMatch "^(0x[0-9a-f]*|0[0-7]*|[1-9][0-9]*)$" $label)) (gt (len $label) 12) -}}
{{- $bad = true -}}
{{- else -}}
{{- $v := int64 $label -}}
{{- if lt $i (sub $n 1) -}}
{{- if gt $v 255 }}{{ $bad = true }}{{ end -}}
{{- $value = add $value (mul $v (index $powers (sub 3 $i))) -}}
{{- else -}}
{{- if ge $v (index $powers (sub 5 $n)) }}{{ $bad = true }}{{ end -}}
{{- $value = add $value $v -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if not $bad -}}
{{- $hostname = printf "%d.%d.%d.%d" (div $value 16777216) (mod (div $value 65536) 256) (mod (div $value 256) 256) (mod $value 256) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if $bad -}}
{{- dict "problem" true | toYaml -}}
{{- else -}}
{{- $portNumber := ternary "" $digits (eq $port "") -}}
{{- $default := ternary "80" "443" (eq $scheme "http") -}}
{{- $shownPort := ternary "" (printf ":%s" $portNumber) (or (eq $portNumber "") (eq $portNumber $default)) -}}
{{- dict "url" (dict "http" (eq $scheme "http") "hostname" $hostname "host" (printf "%s%s" $hostname $shownPort)) | toYaml -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The proxy's checks of the OpenTelemetry settings, on the container's environment ("env") as
parsed ("out": each value as the settings table reads it; "set": those given): the protocol,
the headers' and resource attributes' syntax, the collector's URL, and the headers sent in clear
text only to a loopback collector unless ALLOW_INSECURE_HTTP=true. Headers from a Secret (null
here) cannot be read: they are taken to hold a header, which is what the Secret is for.
Newline-separated problems, with the proxy's messages.
*/}}
{{- define "ticket-auth-proxy.tracingProblems" -}}
{{- $env := .env -}}
{{- $out := .out -}}
{{- $problems := list -}}
{{- $fromSecret := dict -}}
{{- range $name, $value := $env }}{{ if kindIs "invalid" $value }}{{ $_ := set $fromSecret $name true }}{{ end }}{{ end -}}
{{- $protocol := index $out "OTEL_EXPORTER_OTLP_PROTOCOL" | default "http/protobuf" -}}
{{- if and (ne $protocol "http/protobuf") (not (hasKey $fromSecret "OTEL_EXPORTER_OTLP_PROTOCOL")) -}}
{{- $problems = append $problems (printf "OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf (got %q): the proxy exports OTLP over HTTP with protobuf only, to a collector's port 4318" $protocol) -}}
{{- end -}}
{{- $headers := false -}}
{{- if hasKey $fromSecret "OTEL_EXPORTER_OTLP_HEADERS" -}}
{{- $headers = true -}}
{{- else if hasKey $out "OTEL_EXPORTER_OTLP_HEADERS" -}}
{{- $value := index $out "OTEL_EXPORTER_OTLP_HEADERS" -}}
{{- if include "ticket-auth-proxy.pairsParse" $value -}}
{{- $headers = regexMatch "[^,\\s]" $value -}}
{{- else -}}
{{- $problems = append $problems "OTEL_EXPORTER_OTLP_HEADERS must be key=value pairs separated by commas, values percent-encoded" -}}
{{- end -}}
{{- end -}}
{{- with index $out "OTEL_RESOURCE_ATTRIBUTES" -}}
{{- if and (not (hasKey $fromSecret "OTEL_RESOURCE_ATTRIBUTES")) (not (include "ticket-auth-proxy.pairsParse" .)) -}}
{{- $problems = append $problems (printf "OTEL_RESOURCE_ATTRIBUTES must be key=value pairs separated by commas, values percent-encoded (got %q)" .) -}}
{{- end -}}
{{- end -}}
{{- $key := ternary "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" "OTEL_EXPORTER_OTLP_ENDPOINT" (hasKey $out "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") -}}
{{- $disabled := has (lower (toString (index $out "OTEL_SDK_DISABLED" | default "false"))) (list "true" "1" "yes") -}}
{{- if and (hasKey $out $key) (not (hasKey $fromSecret $key)) (not $disabled) -}}
{{- $given := index $out $key -}}
{{- $r := include "ticket-auth-proxy.collectorUrl" $given | fromYaml -}}
{{- if $r.problem -}}
{{- $problems = append $problems (printf "%s must be an absolute http or https URL without credentials, such as http://otel-collector:4318 (got %q)" $key (include "ticket-auth-proxy.withoutUserinfo" $given)) -}}
{{- else -}}
{{- $insecure := has (lower (toString (index $out "ALLOW_INSECURE_HTTP" | default "false"))) (list "true" "1" "yes") -}}
{{- $loopback := regexMatch "^(localhost|.*\\.localhost|127\\.[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}|\\[::1\\]|\\[::ffff:127\\..*\\]|\\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\\])$" $r.url.hostname -}}
{{- if and $r.url.http $headers (not $insecure) (not $loopback) -}}
{{- $problems = append $problems (printf "OTEL_EXPORTER_OTLP_HEADERS would be sent in the clear to %s (%s is http): use an https collector, a loopback one, or set ALLOW_INSECURE_HTTP=true" $r.url.host $key) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- join "\n" $problems -}}
{{- end -}}
