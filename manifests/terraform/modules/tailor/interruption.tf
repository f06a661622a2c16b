# The interruption queue and the EventBridge rules that feed it, as Karpenter sets them up. The
# chart's settings.interruptionQueue names it to Tailor, and the controller policy lets Tailor
# read and delete its messages (queue_arn).

resource "aws_sqs_queue" "interruption" {
  name = local.queue_name
  # An interruption warning is worth acting on for two minutes at most; older messages would
  # only make the handler act on instances long gone.
  message_retention_seconds = 300
  sqs_managed_sse_enabled   = true
  tags                      = var.tags

  lifecycle {
    precondition {
      condition     = length(local.queue_name) <= 80
      error_message = "The queue name \"${local.queue_name}\" is longer than SQS's 80 characters: set interruption_queue_name."
    }
  }
}

data "aws_iam_policy_document" "interruption_queue" {
  statement {
    sid       = "EventBridgeSendsEvents"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.interruption.arn]

    principals {
      type        = "Service"
      identifiers = ["events.amazonaws.com", "sqs.amazonaws.com"]
    }
  }

  statement {
    sid       = "DenyHTTP"
    effect    = "Deny"
    actions   = ["sqs:*"]
    resources = [aws_sqs_queue.interruption.arn]

    principals {
      type        = "*"
      identifiers = ["*"]
    }

    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}

resource "aws_sqs_queue_policy" "interruption" {
  queue_url = aws_sqs_queue.interruption.url
  policy    = data.aws_iam_policy_document.interruption_queue.json
}

locals {
  interruption_events = {
    spot_interruption = {
      name        = "SpotInterruption"
      description = "EC2 Spot Instance Interruption Warning: the instance is reclaimed in two minutes"
      event_pattern = {
        source      = ["aws.ec2"]
        detail-type = ["EC2 Spot Instance Interruption Warning"]
      }
    }
    rebalance_recommendation = {
      name        = "RebalanceRecommendation"
      description = "EC2 Instance Rebalance Recommendation: the Spot instance is at elevated risk of interruption"
      event_pattern = {
        source      = ["aws.ec2"]
        detail-type = ["EC2 Instance Rebalance Recommendation"]
      }
    }
    instance_state_change = {
      name        = "InstanceStateChange"
      description = "EC2 Instance State-change Notification: the instance is stopping or terminating"
      event_pattern = {
        source      = ["aws.ec2"]
        detail-type = ["EC2 Instance State-change Notification"]
      }
    }
    # Only EC2's scheduled changes (retirement, maintenance): the other Health events concern
    # nothing Tailor acts on.
    scheduled_change = {
      name        = "ScheduledChange"
      description = "AWS Health Event: an EC2 scheduled change such as instance retirement"
      event_pattern = {
        source      = ["aws.health"]
        detail-type = ["AWS Health Event"]
        detail = {
          service           = ["EC2"]
          eventTypeCategory = ["scheduledChange"]
        }
      }
    }
  }
}

resource "aws_cloudwatch_event_rule" "interruption" {
  for_each = local.interruption_events

  # A prefix, not a name: rule names are limited to 64 characters and must be unique per
  # account and region, so each cluster's rules get a generated suffix.
  name_prefix   = "Tailor${each.value.name}-"
  description   = "${each.value.description} (Tailor, cluster ${var.cluster_name})"
  event_pattern = jsonencode(each.value.event_pattern)
  tags          = var.tags
}

resource "aws_cloudwatch_event_target" "interruption" {
  for_each = local.interruption_events

  rule      = aws_cloudwatch_event_rule.interruption[each.key].name
  target_id = "TailorInterruptionQueue"
  arn       = aws_sqs_queue.interruption.arn
}
