# agent-host shell integration for fish (sourced through `fish -i -C`, after your own config.fish):
# OSC 633 marks for each command (E the command line, C executed, D;<exit status> finished,
# P;Cwd=<directory>, A prompt start); the host removes them from the output. Each mark ends with this
# terminal's nonce, kept in an unexported variable: a mark printed by anything else is not believed.
set -g __ahp_nonce $AHP_TERMINAL_NONCE
set -e AHP_TERMINAL_NONCE
function __ahp_escape
    string replace -a '\\' '\\\\' -- $argv[1] | string replace -a ';' '\\x3b' | string join '\\x0a'
end

function __ahp_preexec --on-event fish_preexec
    printf '\e]633;E;%s;%s\a\e]633;C;%s\a' (__ahp_escape "$argv[1]") "$__ahp_nonce" "$__ahp_nonce"
end

function __ahp_postexec --on-event fish_postexec
    set -g __ahp_status $status
end

function __ahp_prompt --on-event fish_prompt
    printf '\e]633;D;%s;%s\a\e]633;P;Cwd=%s;%s\a\e]633;A;%s\a' "$__ahp_status" "$__ahp_nonce" (__ahp_escape "$PWD") "$__ahp_nonce" "$__ahp_nonce"
    set -e __ahp_status
end
