# agent-host shell integration for fish (sourced through `fish -i -C`, after your own config.fish):
# OSC 633 marks for each command (E the command line, C executed, D;<exit status> finished,
# P;Cwd=<directory>, A prompt start); the host removes them from the output.
function __ahp_escape
    string replace -a '\\' '\\\\' -- $argv[1] | string replace -a ';' '\\x3b' | string join '\\x0a'
end

function __ahp_preexec --on-event fish_preexec
    printf '\e]633;E;%s\a\e]633;C\a' (__ahp_escape "$argv[1]")
end

function __ahp_postexec --on-event fish_postexec
    set -g __ahp_status $status
end

function __ahp_prompt --on-event fish_prompt
    printf '\e]633;D;%s\a\e]633;P;Cwd=%s\a\e]633;A\a' "$__ahp_status" (__ahp_escape "$PWD")
    set -e __ahp_status
end
